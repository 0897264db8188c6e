import type { ModelConfig } from '../config/types.js';

/** The model catalog as the daemon serves it: lookup by full id. */
export class Catalog {
  private readonly byId: Map<string, ModelConfig>;

  constructor(readonly models: readonly ModelConfig[]) {
    this.byId = new Map(models.map((model) => [model.id, model]));
  }

  get(id: string): ModelConfig | undefined {
    return this.byId.get(id);
  }
}
