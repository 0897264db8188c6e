import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { handleBedrockEmbeddings } from './bedrock-invoke.js';
import { converseResponse, converseStreamPlan, type ConverseIds } from './bedrock-stream.js';
import { checkReasoning, conversePrompt, lastUserText, validateConverse } from './bedrock-validate.js';
import { isRecord, parseDirective, randomId, resolveReply, ScenarioError, type Scenario } from './scenario.js';
import type { Exchange } from './server.js';
import { verifySigV4, type AwsCredentials } from './sigv4.js';
import { thoughtFor } from './thinking.js';
import { completionTokens } from './tokens.js';

/**
 * AWS Bedrock Runtime, as the simulator serves it under `/bedrock` (the client's endpoint is
 * `${sim.url}/bedrock`, i.e. `sim.bedrockBaseUrl`):
 *
 * - `POST /model/{modelId}/converse`: Converse (JSON);
 * - `POST /model/{modelId}/converse-stream`: ConverseStream (application/vnd.amazon.eventstream);
 * - `POST /model/{modelId}/invoke`: InvokeModel, for the embedding models only (bedrock-invoke.ts).
 *
 * `{modelId}` is one path segment, percent-decoded (`:` raw or as `%3A`; an ARN's `/` as `%2F`).
 * Every request is authenticated first: SigV4 (sigv4.ts; service `bedrock`, the simulator's
 * region and keys, its session token when it has one), or `Authorization: Bearer <sim.apiKey>`
 * (a Bedrock API key). Errors are AWS's: the status, `x-amzn-errortype: <Name>:<namespace>`,
 * `x-amzn-requestid` and a JSON `{"message": ...}` body. A model id starting with `missing` is
 * not a model (400 ValidationException). Request checks, streaming and usage: bedrock-validate.ts,
 * bedrock-stream.ts.
 */

export type BedrockAction = 'converse' | 'converse-stream' | 'invoke';

export interface BedrockCall {
  action: BedrockAction;
  /** The model id as decoded from the path (an id, an inference profile id or an ARN). */
  modelId: string;
  auth: 'sigv4' | 'bearer';
}

export type { AwsCredentials } from './sigv4.js';

/** The simulator's AWS credentials: the options given, else AKIDSIMULATOR00000000 / sim-aws-secret-access-key in us-east-1, no session token. */
export function awsCredentials(options: Partial<AwsCredentials> = {}): AwsCredentials {
  return {
    accessKeyId: options.accessKeyId ?? 'AKIDSIMULATOR00000000',
    secretAccessKey: options.secretAccessKey ?? 'sim-aws-secret-access-key',
    ...(options.sessionToken !== undefined ? { sessionToken: options.sessionToken } : {}),
    region: options.region ?? 'us-east-1',
  };
}

const BEDROCK_NS = 'http://internal.amazon.com/coral/com.amazon.bedrock/';
const CORAL_NS = 'http://internal.amazon.com/coral/com.amazon.coral.service/';
const JSON_TYPE = 'application/json';

/** Writes an AWS error: status, `x-amzn-errortype`, `x-amzn-requestid`, JSON body. `coral`: the auth layer's namespace. */
export function sendAwsError(res: ServerResponse, status: number, type: string, message: string, extra: Record<string, string> = {}, coral = false, messageKey = 'message'): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify({ [messageKey]: message });
  res.writeHead(status, {
    ...extra,
    'content-type': JSON_TYPE,
    'content-length': String(Buffer.byteLength(text)),
    'x-amzn-requestid': extra['x-amzn-requestid'] ?? randomUUID(),
    'x-amzn-errortype': `${type}:${coral ? CORAL_NS : BEDROCK_NS}`,
  });
  res.end(text);
}

const ROUTE = /^\/bedrock\/model\/([^/]+)\/(converse|converse-stream|invoke)$/;

/**
 * Routes and authenticates a `/bedrock/...` request before anything else is read: the call it
 * is, or undefined once AWS's refusal was sent (unknown operation, missing or bad credentials).
 */
export function bedrockGate(req: IncomingMessage, res: ServerResponse, url: URL, raw: Buffer, aws: AwsCredentials, apiKey: string): BedrockCall | undefined {
  const match = ROUTE.exec(url.pathname);
  let modelId: string | undefined;
  try {
    modelId = match ? decodeURIComponent(match[1] ?? '') : undefined;
  } catch {
    modelId = undefined;
  }
  if (!match || modelId === undefined || req.method !== 'POST') {
    sendAwsError(res, 404, 'UnknownOperationException', 'Unknown operation', {}, true);
    return undefined;
  }
  const authorization = req.headers.authorization;
  if (!authorization) {
    sendAwsError(res, 403, 'MissingAuthenticationTokenException', 'Missing Authentication Token', {}, true);
    return undefined;
  }
  const bearer = /^Bearer\s+(.+)$/i.exec(authorization);
  if (bearer) {
    if ((bearer[1] ?? '').trim() !== apiKey) {
      // What Bedrock answers a wrong API key, capitalized `Message` and all.
      sendAwsError(res, 403, 'AccessDeniedException', 'Authentication failed: Please make sure your API Key is valid.', {}, true, 'Message');
      return undefined;
    }
    return { action: match[2] as BedrockAction, modelId, auth: 'bearer' };
  }
  const failure = verifySigV4(req, raw, aws, 'bedrock');
  if (failure) {
    sendAwsError(res, failure.status, failure.type, failure.message, {}, true);
    return undefined;
  }
  return { action: match[2] as BedrockAction, modelId, auth: 'sigv4' };
}

const SCRIPTED: Record<number, { type: string; message: string }> = {
  400: { type: 'ValidationException', message: 'Malformed input request, please reformat your input and try again.' },
  403: { type: 'AccessDeniedException', message: "You don't have access to the model with the specified model ID." },
  404: { type: 'ResourceNotFoundException', message: 'Could not find the requested resource.' },
  408: { type: 'ModelTimeoutException', message: 'Model has timed out in processing the request. Try your request again.' },
  424: { type: 'ModelErrorException', message: 'The model returned an error. Try your request again.' },
  429: { type: 'ThrottlingException', message: 'Too many requests, please wait before trying again.' },
  500: { type: 'InternalServerException', message: 'The system encountered an unexpected error during processing. Try your request again.' },
  503: { type: 'ServiceUnavailableException', message: 'Bedrock is unable to process your request.' },
};

const MODEL_NOT_READY =
  'Model is not ready to serve inference requests. The AWS SDK will automatically retry the operation up to 5 times. For information about configuring automatic retries, see Retry behavior in the AWS SDKs and Tools reference guide.';

/** The error name and message Bedrock sends for a scripted status (`code` names it instead, when given). */
export function scriptedBedrockError(status: number, message: string | undefined, code: string | undefined): { type: string; message: string } {
  const base = SCRIPTED[status] ?? (status >= 500 ? SCRIPTED[500] : SCRIPTED[400]) ?? { type: 'ValidationException', message: 'Invalid request.' };
  if (code === 'ModelNotReadyException') return { type: code, message: message ?? MODEL_NOT_READY };
  return { type: code ?? base.type, message: message ?? base.message };
}

/** The Exchange-level helpers every Bedrock handler uses: its request id and AWS errors. */
export class BedrockReply {
  readonly requestId = randomUUID();
  readonly started = Date.now();
  constructor(readonly ex: Exchange) {}

  get headers(): Record<string, string> {
    return { 'x-amzn-requestid': this.requestId };
  }

  fail(status: number, type: string, message: string, extra: Record<string, string> = {}): void {
    if (this.ex.gone) return;
    sendAwsError(this.ex.res, status, type, message, { ...extra, ...this.headers });
  }

  invalid(message: string): void {
    this.fail(400, 'ValidationException', message);
  }

  /** Plays a scripted error (after its delay); true when the scenario had one. */
  async scriptedError(scenario: Scenario): Promise<boolean> {
    if (!scenario.error) return false;
    if (!(await this.ex.sleep(scenario.delayMs))) return true;
    const { status, retryAfterSeconds } = scenario.error;
    const { type, message } = scriptedBedrockError(status, scenario.error.message, scenario.error.code);
    this.fail(status, type, message, retryAfterSeconds !== undefined ? { 'retry-after': String(retryAfterSeconds) } : {});
    return true;
  }

  latencyMs(): number {
    return Math.max(1, Date.now() - this.started);
  }
}

/** The name at the end of an ARN (`.../inference-profile/us.anthropic...`), or the id itself. */
export function modelName(modelId: string): string {
  return modelId.startsWith('arn:') ? modelId.slice(modelId.lastIndexOf('/') + 1) : modelId;
}

export async function handleBedrock(ex: Exchange, call: BedrockCall): Promise<void> {
  const reply = new BedrockReply(ex);
  const name = modelName(call.modelId);
  if (call.modelId.startsWith('missing') || name.startsWith('missing')) return reply.invalid('The provided model identifier is invalid.');
  const body = jsonBody(ex);
  if (!body) return reply.invalid('Malformed input request, please reformat your input and try again.');
  if (call.action === 'invoke') return handleBedrockEmbeddings(ex, reply, name, body);
  return handleConverse(ex, reply, call, body);
}

/**
 * The JSON body. InvokeModel's body is a blob: SDKs send it as `application/octet-stream` unless
 * told `contentType`, which the Exchange leaves unparsed (and records as `{bytes, contentType}`).
 */
function jsonBody(ex: Exchange): Record<string, unknown> | undefined {
  if (ex.bodyInvalid) return undefined;
  if (isRecord(ex.body)) return ex.body;
  if (ex.body !== undefined || ex.raw.length === 0) return undefined;
  try {
    const parsed: unknown = JSON.parse(ex.raw.toString('utf8'));
    return isRecord(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

const CLAUDE = /anthropic\.claude|claude-/;

async function handleConverse(ex: Exchange, reply: BedrockReply, call: BedrockCall, body: Record<string, unknown>): Promise<void> {
  const name = modelName(call.modelId);
  if (/embed/.test(name)) return reply.invalid("This action doesn't support the model that you provided. Try again with a supported text or chat model.");
  const invalid = validateConverse(body);
  if (invalid) return reply.invalid(invalid);
  const claude = CLAUDE.test(name);
  const reasoning = checkReasoning(body, claude);
  if ('error' in reasoning) return reply.invalid(reasoning.error);

  let directive: Scenario | undefined;
  try {
    const text = lastUserText(body);
    directive = text === undefined ? undefined : parseDirective(text);
  } catch (error) {
    if (error instanceof ScenarioError) return reply.invalid(error.message);
    throw error;
  }
  const scenario = ex.scenarioFor(directive);
  if (await reply.scriptedError(scenario)) return;
  const resolved = resolveReply(scenario, 'bedrock', call.modelId, conversePrompt(body));
  // Extended thinking (Claude, through additionalModelRequestFields.thinking): a reasoning block first, billed as output.
  const thought = reasoning.thinking ? thoughtFor(call.modelId) : undefined;
  if (thought !== undefined && resolved.usage && scenario.usage === undefined) resolved.usage.output += completionTokens('bedrock', call.modelId, thought);
  const ids: ConverseIds = { toolUseIds: resolved.toolCalls.map((c) => c.id ?? `tooluse_${randomId(22)}`), thought };
  const stream = call.action === 'converse-stream';
  const response = converseResponse(resolved, ids);
  ex.noteUsage(response.usage);
  await ex.respond({
    scenario,
    stream,
    headers: reply.headers,
    json: () => ({ contentType: JSON_TYPE, text: JSON.stringify({ ...response, metrics: { latencyMs: reply.latencyMs() } }) }),
    plan: () => converseStreamPlan(resolved, ids, reply.latencyMs()),
    // Scripted errors were answered above (their header depends on the status).
    error: (status, message, code) => ({ contentType: JSON_TYPE, text: JSON.stringify({ message: scriptedBedrockError(status, message, code).message }) }),
  });
}
