/** The JSON shapes of the dashboard's API (amounts are INR numbers, times ISO strings). */

export type Role = 'admin' | 'user';

export interface User {
  id: string;
  email: string;
  name: string;
  role: Role;
  balance: number;
  /** ₹ per spend_period that all of its keys together may spend; null: none. */
  spend_limit?: number | null;
  spend_period?: string | null;
  spent_this_period?: number | null;
  period_resets_at?: string | null;
  created_at: string;
}

/** An alert the gateway raised (GET /api/admin/alerts). */
export interface AlertView {
  id: string;
  event: string;
  subject: string;
  account_id: string | null;
  text: string;
  delivery: 'pending' | 'delivered' | 'failed' | 'not_sent';
  attempts: number;
  last_error: string | null;
  created_at: string;
}

export interface Me {
  user: User;
  csrf_token: string;
  expires_at: string;
}

export interface SignupResponse {
  user: User;
  token: string;
  csrf_token: string;
}

export interface LoginResponse {
  token: string;
  expires_at: string;
  csrf_token: string;
}

export type KeyStatus = 'active' | 'expired' | 'revoked' | 'exhausted';

export interface ApiKey {
  id: string;
  object: 'api_key';
  account_id: string;
  name: string;
  masked_key: string;
  rate_limit: number;
  /** INR; 0 = unlimited. */
  budget: number;
  spent: number;
  /** The models the key may call (ids, aliases, patterns); empty: all. */
  models?: string[];
  /** The addresses and CIDRs it may be used from; empty: anywhere. */
  allowed_ips?: string[];
  /** Calls in flight at once, tokens per minute; null: no limit. */
  max_parallel?: number | null;
  tpm_limit?: number | null;
  /** The period the budget renews over; null: for the key's life. */
  budget_period?: string | null;
  spent_this_period?: number;
  period_resets_at?: string | null;
  status: KeyStatus;
  expires_at: string | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface CreatedApiKey extends ApiKey {
  api_key: string;
}

export interface ManagementKey {
  id: string;
  object: 'management_key';
  account_id: string;
  name: string;
  masked_key: string;
  status: KeyStatus;
  expires_at: string | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface CreatedManagementKey extends ManagementKey {
  management_key: string;
}

export interface ListOf<T> {
  object?: 'list';
  data: T[];
}

export interface Page<T> extends ListOf<T> {
  has_more: boolean;
  next_before: string | number | null;
}

export interface Overview {
  balance: number;
  held: number;
  currency: 'INR';
  spent_today: number;
  spent_month: number;
  calls_today: number;
  errors_today: number;
  calls_month: number;
  errors_month: number;
  top_keys: { api_key_id: string | null; name: string | null; cost: number; calls: number }[];
  top_models: { model: string; cost: number; calls: number }[];
}

export interface DailyRow {
  day: string;
  model: string;
  calls: number;
  errors: number;
  cost: number;
}

export const ENDPOINTS = ['chat.completions', 'responses', 'messages', 'embeddings', 'audio.speech', 'audio.transcriptions', 'images.generations'] as const;
export type Endpoint = (typeof ENDPOINTS)[number];

export type Unit = 'tokens' | 'characters' | 'seconds' | 'images';

export interface UsageRow {
  id: string | number;
  request_id: string;
  account_id: string;
  account_email?: string | null;
  api_key_id: string | null;
  api_key_name: string | null;
  model: string;
  /** The alias the client named the model by (`aliases:` in the gateway's config); null or absent: named directly. */
  requested_model?: string | null;
  provider: string;
  endpoint: string;
  stream: boolean;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  unit?: Unit;
  units?: number;
  cost: number;
  /** The call's HTTP status (200, 429, 502…); 'ok' | 'error' in the first draft of the contract. */
  status: number | 'ok' | 'error';
  error_type: string | null;
  latency_ms: number | null;
  created_at: string;
}

export type LedgerKind = 'topup' | 'charge' | 'refund';

export interface LedgerEntry {
  id: string | number;
  kind: LedgerKind;
  amount: number;
  balance_after: number;
  reference: string | null;
  request_id: string | null;
  api_key_id: string | null;
  note: string | null;
  created_at: string;
}

export type ModelType = 'chat' | 'embedding' | 'speech' | 'transcription' | 'image';

export interface ModelPricing {
  currency?: 'INR';
  input_per_1m: number | null;
  output_per_1m: number | null;
  cache_read_per_1m: number | null;
  cache_write_per_1m?: number | null;
  input_per_1m_chars: number | null;
  per_minute: number | null;
  per_image: number | null;
  image_prices: Record<string, number> | null;
  billed_in: Unit;
}

export interface CatalogModel {
  id: string;
  name: string;
  provider: string;
  type: ModelType;
  context_window: number;
  context_window_unit: 'tokens' | 'characters' | null;
  input_cost_per_1m: number;
  output_cost_per_1m: number;
  max_output_tokens: number | null;
  pricing: ModelPricing;
  /** An alias's target model (its prices are the target's); absent on models. */
  alias_of?: string;
  /** The alias is a glob (`*` is any run of characters). */
  alias_pattern?: boolean;
}

export interface Account {
  id: string;
  email: string;
  name: string;
  role: Role;
  balance: number;
  /** ₹ per spend_period that all of its keys together may spend; null: none. */
  spend_limit?: number | null;
  spend_period?: string | null;
  spent_this_period?: number | null;
  period_resets_at?: string | null;
  created_at: string;
}

export interface TopupResult {
  entry: LedgerEntry;
  balance: number;
  /** True when this reference was applied before: nothing was added this time. */
  replayed?: boolean;
}

/** Why a deployment or a provider key rests: failures (the cooldown), auth (a refused key), quota (an exhausted quota), retry-after (the upstream asked to wait). */
export type RestReason = 'failures' | 'auth' | 'quota' | 'retry-after';

export interface RestState {
  state: 'ok' | 'resting';
  /** ISO time the rest ends; null when ok. */
  resting_until: string | null;
  reason: RestReason | null;
}

/** A provider's key: its index and fingerprint (never the key). */
export interface RouteKey extends RestState {
  index: number;
  fingerprint: string;
}

export interface RouteDeployment extends RestState {
  id: string;
  provider: string;
  upstream_model: string;
  weight: number;
  priority: number;
  keys: RouteKey[];
  in_flight: number;
  /** Attempts in the last window. */
  calls: number;
  failures: number;
  /** Recent time to an answer, ms; null before the first. */
  latency_ms: number | null;
}

export interface ModelRoutes {
  model: string;
  type: ModelType;
  /** In the order they are tried. */
  deployments: RouteDeployment[];
  fallbacks: string[];
}

/** GET /api/admin/routes: the router as an operator sees it. */
export interface RoutesView {
  object: 'routes';
  strategy: string;
  retries: number;
  window_seconds: number;
  cooldown: { failures: number; window_seconds: number; duration_seconds: number };
  data: ModelRoutes[];
}

/** The error envelope every API error answers with. */
export interface ErrorBody {
  error: {
    message: string;
    type?: string;
    code?: number | string | null;
    reason?: string | null;
    param?: string | null;
  };
}
