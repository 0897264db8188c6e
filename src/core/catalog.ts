import type { ModelConfig, ModelType } from '../config/types.js';
import { GatewayError } from './errors.js';

/**
 * The model catalog as the daemon serves it. A model is named by its full id
 * (`openai/gpt-4o-mini`) or by a short name (`gpt-4o-mini`) when exactly one model has it.
 */
export class Catalog {
  private readonly byId: Map<string, ModelConfig>;
  private readonly byShortName = new Map<string, ModelConfig[]>();

  constructor(readonly models: readonly ModelConfig[]) {
    this.byId = new Map(models.map((model) => [model.id, model]));
    for (const model of models) {
      const short = model.id.slice(model.provider.length + 1);
      const list = this.byShortName.get(short) ?? [];
      list.push(model);
      this.byShortName.set(short, list);
    }
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
    const matches = this.byShortName.get(name) ?? [];
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
