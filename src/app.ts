import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { GatewayConfig } from './config/types.js';
import { KeyAuthenticator } from './core/auth/key-auth.js';
import { resolveJwtSecret, SessionTokens } from './core/auth/sessions.js';
import { Catalog } from './core/catalog.js';
import type { KeyKind } from './core/keys.js';
import { AccountService } from './core/management/accounts.js';
import { KeyService } from './core/management/keys.js';
import { UsageService } from './core/management/usage.js';
import { WalletService } from './core/management/wallet.js';
import type { Store } from './store/store.js';

/** Everything a request handler may use, built once at start. */
export interface App {
  readonly config: GatewayConfig;
  readonly logger: Logger;
  readonly store: Store;
  readonly redis: Redis | undefined;
  readonly sessions: SessionTokens;
  readonly keyAuth: Record<KeyKind, KeyAuthenticator>;
  readonly accounts: AccountService;
  readonly keys: KeyService;
  readonly wallet: WalletService;
  readonly usage: UsageService;
  readonly catalog: Catalog;
  readonly lifecycle: Lifecycle;
}

/** Shutdown state, and hooks that end long-lived responses (SSE streams) when it begins. */
export class Lifecycle {
  private stopping = false;
  private readonly hooks = new Set<() => void>();

  get shuttingDown(): boolean {
    return this.stopping;
  }

  onShutdown(hook: () => void): () => void {
    this.hooks.add(hook);
    return () => this.hooks.delete(hook);
  }

  beginShutdown(): void {
    if (this.stopping) return;
    this.stopping = true;
    for (const hook of [...this.hooks]) hook();
    this.hooks.clear();
  }
}

export function createApp(config: GatewayConfig, store: Store, redis: Redis | undefined, logger: Logger): App {
  const keyAuth = { api: new KeyAuthenticator(store.apiKeys), management: new KeyAuthenticator(store.managementKeys) };
  return {
    config,
    logger,
    store,
    redis,
    sessions: new SessionTokens(resolveJwtSecret(config.auth.jwtSecret, config.database.path), config.auth.sessionTtlSeconds),
    keyAuth,
    accounts: new AccountService(store, { bcryptRounds: config.auth.bcryptRounds, login: config.auth.login }),
    keys: new KeyService(store, keyAuth),
    wallet: new WalletService(store),
    usage: new UsageService(store),
    catalog: new Catalog(config.models),
    lifecycle: new Lifecycle(),
  };
}
