import type { ModelAlias, ModelConfig, ModelType } from '../config/types.js';
import { GatewayError } from './errors.js';

/**
 * The model catalog as the daemon serves it. A model is named by its full id
 * (`openai/gpt-4o-mini`) or by a short name (`gpt-4o-mini`). A short name several models share
 * goes to the one whose provider ranks first (`rank`: one with credentials before one without,
 * a vendor's own API before a cloud's), and is ambiguous when several rank first.
 * Aliases (`aliases:` in the config) are other names for catalog models; the ingress resolves
 * them (`alias`) before the gateway sees the model, so `resolve` and `find` know catalog names only.
 */
export class Catalog {
  private readonly byId: Map<string, ModelConfig>;
  private readonly byShortName = new Map<string, ModelConfig[]>();
  /** Exact aliases ► their target ids. */
  private readonly exactAliases = new Map<string, string>();
  /** Pattern aliases, in file order. */
  private readonly patterns: Array<{ test: RegExp; target: string }> = [];

  constructor(
    readonly models: readonly ModelConfig[],
    readonly aliases: readonly ModelAlias[] = [],
    /** A provider's precedence for the short names its models share with others (lower first); all equal when not given. */
    private readonly rank: (provider: string) => number = () => 0,
  ) {
    this.byId = new Map(models.map((model) => [model.id, model]));
    for (const model of models) {
      const short = model.id.slice(model.provider.length + 1);
      const list = this.byShortName.get(short) ?? [];
      list.push(model);
      this.byShortName.set(short, list);
    }
    for (const alias of aliases) {
      if (alias.pattern) this.patterns.push({ test: globPattern(alias.name), target: alias.target });
      else this.exactAliases.set(alias.name, alias.target);
    }
  }

  /**
   * The catalog model id a client's name stands for when it is an alias, else undefined. In
   * order: an exact alias; a name the catalog knows itself (an id, or a short name, even an
   * ambiguous one) is never an alias; then the patterns, the first that matches.
   */
  alias(name: string): string | undefined {
    const exact = this.exactAliases.get(name);
    if (exact !== undefined) return exact;
    if (this.patterns.length === 0 || this.byId.has(name) || this.byShortName.has(name)) return undefined;
    for (const pattern of this.patterns) if (pattern.test.test(name)) return pattern.target;
    return undefined;
  }

  get(id: string): ModelConfig | undefined {
    return this.byId.get(id);
  }

  /** The model a client named, of any type; 404 / 400 with what to do otherwise. */
  find(name: string): ModelConfig {
    return this.byId.get(name) ?? this.resolveShort(name);
  }

  /** The model a client named, of the type the endpoint serves; 404 / 400 with what to do otherwise. */
  resolve(name: string, type: ModelType): ModelConfig {
    const model = this.byId.get(name) ?? this.resolveShort(name);
    if (model.type !== type) {
      throw new GatewayError({
        status: 400,
        type: 'invalid_request_error',
        reason: 'model_not_supported',
        param: 'model',
        message: `model '${name}' is a ${model.type} model and cannot serve this endpoint (it needs a ${type} model; GET /api/models lists each model's type)`,
      });
    }
    return model;
  }

  private resolveShort(name: string): ModelConfig {
    let matches = this.byShortName.get(name) ?? [];
    if (matches.length > 1) {
      const first = Math.min(...matches.map((model) => this.rank(model.provider)));
      matches = matches.filter((model) => this.rank(model.provider) === first);
    }
    if (matches.length === 1) return matches[0] as ModelConfig;
    if (matches.length > 1) {
      throw new GatewayError({
        status: 400,
        type: 'invalid_request_error',
        reason: 'model_ambiguous',
        param: 'model',
        message: `model '${name}' is ambiguous: use one of ${matches.map((m) => `'${m.id}'`).join(', ')}`,
      });
    }
    throw new GatewayError({
      status: 404,
      type: 'not_found_error',
      reason: 'model_not_found',
      param: 'model',
      message: `model '${name}' does not exist: name it as <provider>/<model>; GET /v1/models lists the available models`,
    });
  }
}

/** `claude-*-haiku-*` as an anchored expression: `*` is any run of characters (none included), the rest literal. */
export function globPattern(glob: string): RegExp {
  return new RegExp(`^${glob.split('*').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`, 's');
}
