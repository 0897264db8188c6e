import type { GatewayConfig, ModelConfig } from '../../config/types.js';
import { chatFamily, PROVIDER_FAMILIES } from '../../providers/registry.js';
import type { PromptTokenMargin } from '../tokens.js';

/**
 * The prompt-token margin of a model (core/tokens.ts): the largest of the families serving it,
 * a provider's own `tokenizer` settings over its family's, so that one bound covers whichever
 * deployment serves. Admission's tight bound and count_tokens' estimate take it.
 */
export function modelPromptMargin(config: GatewayConfig, model: ModelConfig): PromptTokenMargin {
  let margin: PromptTokenMargin | undefined;
  for (const deployment of model.deployments) {
    const provider = config.providers[deployment.provider];
    if (!provider || provider.type === 'deepgram') continue;
    const family = chatFamily(provider, deployment.upstreamModel);
    const own: PromptTokenMargin = provider.tokenizer ? { ...family.promptTokenMargin, ...provider.tokenizer } : family.promptTokenMargin;
    margin = !margin ? own : { ratio: Math.max(margin.ratio, own.ratio), splitDigits: margin.splitDigits || own.splitDigits, toolsOverhead: Math.max(margin.toolsOverhead, own.toolsOverhead) };
  }
  return margin ?? PROVIDER_FAMILIES.openai.promptTokenMargin;
}
