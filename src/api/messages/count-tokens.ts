import type { App } from '../../app.js';
import type { ChatProviderType, Deployment, GatewayConfig, ModelConfig, ProviderConfig } from '../../config/types.js';
import type { ChatRequest } from '../../core/canonical.js';
import type { ChatDraft } from '../../core/call-context.js';
import { errors, isGatewayError } from '../../core/errors.js';
import { takeRateSlot } from '../../core/gateway/admission.js';
import { exhaustedKey, rateHeaders } from '../../core/gateway/refusals.js';
import { modelPromptMargin } from '../../core/gateway/margin.js';
import { periodSpend } from '../../core/spend.js';
import { acceptOrThrow, readAll } from '../../core/gateway/upstream-call.js';
import { IMAGE_TOKEN_TYPICAL, promptTokenEstimate } from '../../core/tokens.js';
import { isObject } from '../../core/validate.js';
import type { RequestContext, Route } from '../../http/server.js';
import type { Router } from '../../http/router.js';
import { PROVIDER_FAMILIES, TOKEN_COUNTERS } from '../../providers/registry.js';
import { resolveAliases } from '../aliases.js';
import { requireApiKey } from '../guards.js';
import { callContext } from '../inference.js';
import { decodeMessagesRequest } from './decode.js';
import { encodeMessagesError } from './encode.js';

/** The most of an upstream's count answer read (it is `{"input_tokens": N}`). */
const MAX_COUNT_BODY = 64 * 1024;

/** How the count was made, in `x-gateway-token-count`. */
type CountSource = 'upstream' | 'estimate';

interface Count {
  tokens: number;
  source: CountSource;
  /** The provider entry that counted (upstream counts). */
  provider?: string;
}

/**
 * POST /v1/messages/count_tokens (Anthropic's shape: a messages request without max_tokens;
 * the answer `{"input_tokens": N}`) for every catalog chat model. A model served by a family
 * whose upstream counts (Anthropic: TOKEN_COUNTERS) is counted there, with the request that
 * family would be sent; any other, or when that upstream cannot answer, is estimated with the
 * gateway's tokenizer and the family's margin (src/core/tokens.ts; it errs high, as
 * admission's bound does). `x-gateway-token-count` says which.
 *
 * Free: no hold, no charge, no usage row (an agent counts often; its calls are what it pays
 * for). It takes a slot of the key's rate limit, as a call does (429 past it), and needs a
 * valid key like /v1/messages (x-api-key or Bearer), but no balance.
 */
export function registerCountTokensRoute(router: Router<Route>, app: App): void {
  router.add('POST', '/v1/messages/count_tokens', {
    renderError: encodeMessagesError,
    handle: async (ctx) => {
      const key = await requireApiKey(app, ctx);
      // The budget in its current period (a renewing budget used up yesterday is not today).
      const period = key.budgetMicros === null ? undefined : periodSpend(key, key.budgetPeriod, Date.now(), app.config.governance.timeZone);
      const spent = exhaustedKey({ budgetMicros: key.budgetMicros, spentMicros: period?.spentMicros ?? key.spentMicros, resetsAt: period?.window?.resetsAt });
      if (spent) throw spent;
      const draft = decodeCountRequest(await ctx.json(), ctx.req.headers['anthropic-beta'], ctx.req.headers['anthropic-version']);
      const call = callContext(ctx, key, 'messages.count_tokens', app.catalog);
      resolveAliases(app.catalog, 'chat', draft, call);
      const model = app.catalog.resolve(draft.model, 'chat');
      call.policy?.checkModel(model, call.requestedModel ?? model.id);
      const rate = await takeRateSlot(app.limiter, key.id, call.rateLimit, ctx.requestId);
      const count = await countPrompt(app, ctx, model, draft);
      const headers = rateHeaders(rate);
      headers['x-gateway-token-count'] = count.source;
      headers['x-gateway-model'] = model.id;
      if (count.provider !== undefined) headers['x-gateway-provider'] = count.provider;
      ctx.logFields.model = model.id;
      ctx.logFields.token_count = count.source;
      ctx.send(200, { input_tokens: count.tokens }, headers);
    },
  });
}

/**
 * The body decoded as a messages request: count_tokens takes no max_tokens (one sent is
 * ignored, not refused) and no stream; everything else is checked as /v1/messages checks it,
 * its 400s naming the field.
 */
function decodeCountRequest(raw: unknown, beta: string | string[] | undefined, version: string | string[] | undefined): ChatDraft {
  if (!isObject(raw)) throw errors.bodyNotObject();
  const body: Record<string, unknown> = { ...raw, max_tokens: 1 };
  delete body.stream;
  const draft = decodeMessagesRequest(body, beta, version);
  delete draft.maxTokens;
  return draft;
}

async function countPrompt(app: App, ctx: RequestContext, model: ModelConfig, draft: ChatDraft): Promise<Count> {
  const request = draft as unknown as ChatRequest;
  request.model = model.id;
  request.stream = false;
  // The most the model can be asked for: what a thinking budget is checked against upstream.
  request.maxTokens = model.maxOutputTokens ?? 4096;
  const counter = upstreamCounter(app.config, model);
  if (counter) {
    try {
      return { tokens: await countUpstream(app, ctx, model, counter, request), source: 'upstream', provider: counter.provider.name };
    } catch (error) {
      // The upstream refused the request itself: the client's 400, in its words.
      if (isGatewayError(error) && error.status === 400 && error.upstream?.status === 400) throw error;
      if (ctx.signal.aborted) throw error;
      app.logger.warn({ req_id: ctx.requestId, model: model.id, provider: counter.provider.name, reason: isGatewayError(error) ? error.reason : String(error) }, 'count_tokens: the upstream could not count; estimated instead');
    }
  }
  return { tokens: await promptTokenEstimate(request, modelPromptMargin(app.config, model), IMAGE_TOKEN_TYPICAL), source: 'estimate' };
}

interface UpstreamCounter {
  provider: ProviderConfig;
  deployment: Deployment;
  upstreamModel: string;
  family: ChatProviderType;
}

/** The first deployment (by priority) on a family that counts upstream, with a key; none: estimate. */
function upstreamCounter(config: GatewayConfig, model: ModelConfig): UpstreamCounter | undefined {
  for (const deployment of model.deployments) {
    const provider = config.providers[deployment.provider];
    if (!provider || provider.type === 'deepgram' || provider.apiKeys.length === 0) continue;
    if (TOKEN_COUNTERS[provider.type]) return { provider, deployment, upstreamModel: deployment.upstreamModel, family: provider.type };
  }
  return undefined;
}

async function countUpstream(app: App, ctx: RequestContext, model: ModelConfig, counter: UpstreamCounter, request: ChatRequest): Promise<number> {
  const tokenCounter = TOKEN_COUNTERS[counter.family];
  if (!tokenCounter) throw new Error(`no token counter for ${counter.family}`);
  const keyIndex = app.routes.nextKey(counter.provider, Date.now()) ?? 0;
  const provider = app.pipeline.withKey(counter.provider, keyIndex);
  request.upstreamModel = counter.upstreamModel;
  const upstream = tokenCounter.buildCountRequest(request, provider);
  const telemetry = app.pipeline.telemetry;
  const span = telemetry.countStarted(ctx.observation, { model, deployment: counter.deployment, provider: counter.provider }, performance.now());
  let tokens: number | undefined;
  try {
    const response = await acceptOrThrow(provider, await app.upstream.send(provider, upstream, ctx.signal, span ? telemetry.traceHeaders(span) : undefined), PROVIDER_FAMILIES[counter.family].errorMessage);
    const bytes = await readAll(response, MAX_COUNT_BODY);
    let body: unknown;
    try {
      body = bytes ? JSON.parse(bytes.toString('utf8')) : undefined;
    } catch {
      body = undefined;
    }
    tokens = tokenCounter.parseCount(body);
  } catch (error) {
    telemetry.countEnded(ctx.observation, span, performance.now(), undefined, isGatewayError(error) ? error : errors.internal());
    throw error;
  }
  telemetry.countEnded(ctx.observation, span, performance.now(), tokens);
  if (tokens === undefined) throw new Error('the count answer has no input_tokens');
  return tokens;
}
