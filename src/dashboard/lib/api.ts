import type {
  Account,
  AlertView,
  ApiKey,
  CatalogModel,
  CreatedApiKey,
  CreatedManagementKey,
  DailyRow,
  ErrorBody,
  LedgerEntry,
  ListOf,
  LoginResponse,
  ManagementKey,
  Me,
  Overview,
  Page,
  Role,
  RoutesView,
  SignupResponse,
  TopupResult,
  UsageRow,
} from './types.js';

/**
 * The dashboard's HTTP client. The session is the HttpOnly `token` cookie, which the browser
 * sends by itself (same origin); the client keeps only the session's CSRF token and sends it
 * as `X-CSRF-Token` on every change. A 401 means the session is gone: `onSessionLost` sends
 * the app to the login page. A 403 `csrf_failed` (the token went stale, say after a login in
 * another tab) refreshes the token once and retries.
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly reason: string | null = null,
    readonly param: string | null = null,
    readonly type: string | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Methods that change state: these carry the CSRF token. */
const WRITES = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface RequestOptions {
  body?: unknown;
  /** false for signup/login: a 401 there is a wrong password, not a lost session. */
  session?: boolean;
  signal?: AbortSignal;
}

function isErrorBody(value: unknown): value is ErrorBody {
  if (typeof value !== 'object' || value === null || !('error' in value)) return false;
  const error = (value as { error: unknown }).error;
  return typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string';
}

/** An ApiError from a response that is not 2xx (the envelope when there is one). */
export async function errorOf(response: Response): Promise<ApiError> {
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    body = undefined;
  }
  if (isErrorBody(body)) {
    const e = body.error;
    return new ApiError(response.status, e.message, e.reason ?? null, e.param ?? null, e.type ?? null);
  }
  return new ApiError(response.status, `The server answered ${response.status}${response.statusText ? ` ${response.statusText}` : ''}.`);
}

export class ApiClient {
  csrfToken: string | null = null;

  constructor(
    private readonly fetchImpl: FetchLike,
    /** Called on a 401 from a session endpoint, before the error is thrown. */
    public onSessionLost: (error: ApiError) => void = () => {},
  ) {}

  async request<T>(method: string, path: string, options: RequestOptions = {}, retried = false): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    if (WRITES.has(method) && this.csrfToken) headers['x-csrf-token'] = this.csrfToken;
    // The API answers JSON with cache-control: no-store, so nothing stale is read from a cache.
    const init: RequestInit = { method, headers, credentials: 'same-origin' };
    if (options.body !== undefined) init.body = JSON.stringify(options.body);
    if (options.signal) init.signal = options.signal;
    let response: Response;
    try {
      response = await this.fetchImpl(path, init);
    } catch (error) {
      if (error instanceof Error && error.name === 'AbortError') throw error;
      throw new ApiError(0, 'The gateway did not answer. Check that it is running, then try again.', 'network_error');
    }
    if (response.ok) {
      if (response.status === 204) return undefined as T;
      return (await response.json()) as T;
    }
    const error = await errorOf(response);
    if (error.status === 401 && options.session !== false) this.onSessionLost(error);
    if (error.status === 403 && error.reason === 'csrf_failed' && !retried && options.session !== false) {
      // A stale token: fetch the session's current one and try once more.
      const me = await this.request<Me>('GET', '/api/auth/me');
      this.csrfToken = me.csrf_token;
      return this.request<T>(method, path, options, true);
    }
    throw error;
  }

  get<T>(path: string, signal?: AbortSignal): Promise<T> {
    return this.request<T>('GET', path, signal ? { signal } : {});
  }

  // ---- Session -----------------------------------------------------------------------------

  async me(): Promise<Me> {
    const me = await this.request<Me>('GET', '/api/auth/me');
    this.csrfToken = me.csrf_token;
    return me;
  }

  async signup(input: { email: string; password: string; name: string }): Promise<SignupResponse> {
    const result = await this.request<SignupResponse>('POST', '/api/auth/signup', { body: input, session: false });
    this.csrfToken = result.csrf_token;
    return result;
  }

  async login(input: { email: string; password: string }): Promise<LoginResponse> {
    const result = await this.request<LoginResponse>('POST', '/api/auth/login', { body: input, session: false });
    this.csrfToken = result.csrf_token;
    return result;
  }

  async logout(): Promise<void> {
    try {
      await this.request('POST', '/api/auth/logout', { session: false });
    } finally {
      this.csrfToken = null;
    }
  }

  // ---- Keys --------------------------------------------------------------------------------

  apiKeys(): Promise<ListOf<ApiKey>> {
    return this.get('/api/api-keys');
  }

  createApiKey(input: { name: string; rate_limit: number; budget: number; expires_at?: string; models?: string[]; allowed_ips?: string[]; max_parallel?: number; tpm_limit?: number; budget_period?: string }): Promise<CreatedApiKey> {
    return this.request('POST', '/api/api-keys', { body: input });
  }

  updateApiKey(
    id: string,
    changes: { name?: string; rate_limit?: number; budget?: number; expires_at?: string | null; models?: string[]; allowed_ips?: string[]; max_parallel?: number | null; tpm_limit?: number | null; budget_period?: string | null },
  ): Promise<ApiKey> {
    return this.request('PATCH', `/api/api-keys/${encodeURIComponent(id)}`, { body: changes });
  }

  revokeApiKey(id: string): Promise<ApiKey> {
    return this.request('DELETE', `/api/api-keys/${encodeURIComponent(id)}`);
  }

  managementKeys(): Promise<ListOf<ManagementKey>> {
    return this.get('/api/management-keys');
  }

  createManagementKey(input: { name: string; expires_at?: string }): Promise<CreatedManagementKey> {
    return this.request('POST', '/api/management-keys', { body: input });
  }

  revokeManagementKey(id: string): Promise<ManagementKey> {
    return this.request('DELETE', `/api/management-keys/${encodeURIComponent(id)}`);
  }

  // ---- Dashboard data ----------------------------------------------------------------------

  overview(signal?: AbortSignal): Promise<Overview> {
    return this.get('/api/dashboard/overview', signal);
  }

  daily(days: number, signal?: AbortSignal): Promise<ListOf<DailyRow>> {
    return this.get(`/api/dashboard/daily?days=${days}`, signal);
  }

  /** `query`: from usageQuery() (lib/filters.ts). `admin`: any account's rows (admins). */
  usage(query: string, signal?: AbortSignal, admin = false): Promise<Page<UsageRow>> {
    return this.get(`${admin ? '/api/admin/usage' : '/api/usage'}${query ? `?${query}` : ''}`, signal);
  }

  ledger(query: string, signal?: AbortSignal): Promise<Page<LedgerEntry>> {
    return this.get(`/api/wallet/ledger${query ? `?${query}` : ''}`, signal);
  }

  models(signal?: AbortSignal): Promise<ListOf<CatalogModel>> {
    return this.get('/api/models', signal);
  }

  // ---- Admin -------------------------------------------------------------------------------

  accounts(signal?: AbortSignal): Promise<ListOf<Account>> {
    return this.get('/api/admin/accounts', signal);
  }

  createAccount(input: { email: string; name: string; role?: Role; password?: string }): Promise<Account> {
    return this.request('POST', '/api/admin/accounts', { body: input });
  }

  topup(accountId: string, input: { amount: number; reference: string }): Promise<TopupResult> {
    return this.request('POST', `/api/admin/accounts/${encodeURIComponent(accountId)}/topups`, { body: input });
  }

  setSpendLimit(accountId: string, changes: { spend_limit: number; spend_period: string | null }): Promise<Account> {
    return this.request('PATCH', `/api/admin/accounts/${encodeURIComponent(accountId)}`, { body: changes });
  }

  alerts(signal?: AbortSignal): Promise<ListOf<AlertView>> {
    return this.get('/api/admin/alerts', signal);
  }

  accountKeys(accountId: string, signal?: AbortSignal): Promise<ListOf<ApiKey>> {
    return this.get(`/api/admin/accounts/${encodeURIComponent(accountId)}/api-keys`, signal);
  }

  /** The active models' deployments (several deployments, fallbacks, a rest or traffic). */
  routes(signal?: AbortSignal): Promise<RoutesView> {
    return this.get('/api/admin/routes?active=true', signal);
  }
}

/** Any rejection as an ApiError (a thrown non-API error keeps its message). */
export function asApiError(reason: unknown): ApiError {
  return reason instanceof ApiError ? reason : new ApiError(0, reason instanceof Error ? reason.message : String(reason));
}
