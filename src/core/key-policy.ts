import type { ModelConfig } from '../config/types.js';
import type { KeyRecord } from '../store/keys.js';
import { globPattern, type Catalog } from './catalog.js';
import { normalizeAddress } from './client-address.js';
import { GatewayError } from './errors.js';
import { inCidr, parseCidr, parseIp, type Cidr } from './outbound/address-policy.js';

/**
 * What an API key may do beyond its rate limit and budget (issue 30): the models it may call
 * (catalog ids, aliases, short names and glob patterns such as `openai/*` or `*mini*`) and the
 * addresses it may be used from (IPv4/IPv6 addresses and CIDRs). Compiled once per key record
 * (records are replaced when a key changes); a key that sets neither has no policy, and its
 * calls check nothing.
 */
export class KeyPolicy {
  /** Built by `KeyPolicy.of`. */
  constructor(
    /** Catalog ids named (directly, or through an alias or a short name). */
    private readonly ids: ReadonlySet<string>,
    private readonly patterns: readonly RegExp[],
    private readonly everyModel: boolean,
    private readonly networks: readonly Cidr[],
  ) {}

  /** The key's policy, or undefined when it restricts nothing. */
  static of(key: KeyRecord, catalog: Catalog): KeyPolicy | undefined {
    if (key.models.length === 0 && key.allowedIps.length === 0) return undefined;
    let cached = compiled.get(key);
    if (!cached || cached.catalog !== catalog) {
      cached = { catalog, policy: compile(key, catalog) };
      compiled.set(key, cached);
    }
    return cached.policy;
  }

  allowsModel(model: ModelConfig): boolean {
    if (this.everyModel || this.ids.has(model.id)) return true;
    for (const pattern of this.patterns) if (pattern.test(model.id)) return true;
    return false;
  }

  /** 403 `model_not_allowed` naming the model, unless the key may call it. */
  checkModel(model: ModelConfig, name: string = model.id): void {
    if (this.allowsModel(model)) return;
    throw new GatewayError({
      status: 403,
      type: 'permission_error',
      reason: 'model_not_allowed',
      param: 'model',
      message: `this API key may not call '${name}'${name === model.id ? '' : ` (${model.id})`}: its models list does not include it`,
    });
  }

  allowsAddress(address: string): boolean {
    if (this.networks.length === 0) return true;
    const ip = parseIp(normalizeAddress(address) ?? address);
    return ip !== undefined && this.networks.some((cidr) => inCidr(ip, cidr));
  }

  /** 403 `ip_not_allowed`, unless the key may be used from `address`. */
  checkAddress(address: string): void {
    if (this.allowsAddress(address)) return;
    throw new GatewayError({ status: 403, type: 'permission_error', reason: 'ip_not_allowed', message: `this API key may not be used from ${address}: its allowed_ips list does not include it` });
  }
}

const compiled = new WeakMap<KeyRecord, { catalog: Catalog; policy: KeyPolicy }>();

function compile(key: KeyRecord, catalog: Catalog): KeyPolicy {
  const ids = new Set<string>();
  const patterns: RegExp[] = [];
  for (const entry of key.models) {
    if (entry.includes('*')) {
      patterns.push(globPattern(entry));
      continue;
    }
    const id = catalogIdOf(entry, catalog);
    if (id !== undefined) ids.add(id);
  }
  const networks: Cidr[] = [];
  for (const entry of key.allowedIps) {
    const cidr = parseCidr(entry);
    if (typeof cidr !== 'string') networks.push(cidr);
  }
  return new KeyPolicy(ids, patterns, key.models.length === 0, networks);
}

/** The catalog id a name stands for: an id, an alias's target, or a short name's model. */
export function catalogIdOf(name: string, catalog: Catalog): string | undefined {
  if (catalog.get(name)) return name;
  const target = catalog.alias(name);
  if (target !== undefined) return target;
  try {
    return catalog.find(name).id;
  } catch {
    return undefined;
  }
}

/** The reason an allowed_ips entry is not an address or a CIDR, else undefined. */
export function addressEntryProblem(entry: string): string | undefined {
  const cidr = parseCidr(entry);
  return typeof cidr === 'string' ? cidr : undefined;
}
