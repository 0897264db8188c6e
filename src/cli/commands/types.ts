/** The JSON shapes the management API returns, as the CLI reads them. */

export interface AccountView {
  id: string;
  email: string;
  name: string;
  role: 'admin' | 'user';
  balance: number;
  /** INR per spend_period; null: no limit. */
  spend_limit?: number | null;
  spend_period?: string | null;
  spent_this_period?: number | null;
  period_resets_at?: string | null;
  created_at: string;
}

export interface KeyView {
  id: string;
  object: 'api_key' | 'management_key';
  account_id: string;
  name: string;
  masked_key: string;
  rate_limit?: number;
  models?: string[];
  allowed_ips?: string[];
  /** INR; 0 means unlimited. */
  budget?: number;
  spent?: number;
  max_parallel?: number | null;
  tpm_limit?: number | null;
  budget_period?: string | null;
  spent_this_period?: number;
  period_resets_at?: string | null;
  /** Whether the response cache serves and stores its calls. */
  cache?: boolean;
  status: string;
  expires_at: string | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  api_key?: string;
  management_key?: string;
}

export interface LedgerView {
  id: number;
  kind: string;
  amount: number;
  balance_after: number;
  reference: string | null;
  note: string | null;
  created_at: string;
}

export interface UsageView {
  id: number;
  request_id: string;
  account_id: string;
  account_email: string | null;
  api_key_id: string | null;
  api_key_name: string | null;
  model: string;
  /** The alias the client named the model by (absent from daemons before aliases; null: named directly). */
  requested_model?: string | null;
  provider: string;
  endpoint: string;
  stream: boolean;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  /** Prompt tokens written to a provider's prompt cache (Anthropic); part of input_tokens, like cache_read_tokens. */
  cache_write_tokens: number;
  /** tokens, characters, seconds or images (absent from daemons before media calls). */
  unit?: string;
  units?: number;
  cost: number;
  /** The gateway's response cache: exact, semantic, miss, bypass; null where it did not apply (absent from older daemons). */
  cache?: 'exact' | 'semantic' | 'miss' | 'bypass' | null;
  cache_similarity?: number | null;
  /** INR a hit saved at list price. */
  cache_saved?: number;
  status: number;
  error_type: string | null;
  latency_ms: number;
  created_at: string;
}

export interface CatalogModelView {
  id: string;
  name: string;
  provider: string;
  type: string;
  context_window: number | null;
  /** An alias's target (`aliases:`); absent on models. */
  alias_of?: string;
  pricing: { input_per_1m: number | null; output_per_1m: number | null; per_image: number | null; per_minute: number | null; input_per_1m_chars: number | null };
}

export interface ListOf<T> {
  object: 'list';
  data: T[];
}
