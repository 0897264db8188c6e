import type { ProviderConfig } from '../../config/types.js';
import type { CacheControl, ChatRequest, ContentPart, Message } from '../../core/canonical.js';
import { GatewayError } from '../../core/errors.js';
import { replayedThinking, thinkingField } from '../anthropic/thinking.js';
import { providerHeaders } from '../shared/headers.js';
import { parseArguments } from '../shared/json.js';
import type { UpstreamRequest } from '../types.js';
import type { ConverseBlock, ConverseImageFormat, ConverseMessage, ConverseRequest, ConverseTool, ConverseToolChoice, ConverseToolResultContent } from './wire.js';

/** Bedrock's runtime path for a model id or inference-profile ARN: one path segment (`:` → %3A, `/` → %2F). */
export function bedrockUrl(provider: ProviderConfig, upstreamModel: string, operation: 'converse' | 'converse-stream' | 'invoke'): string {
  return `${provider.baseUrl}/model/${encodeURIComponent(upstreamModel)}/${operation}`;
}

/** Content type, the config's headers and, for a Bedrock API key, the bearer token; SigV4 is added when sent (bedrock/sigv4.ts). */
export function bedrockHeaders(provider: ProviderConfig): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...provider.headers };
  if (provider.apiKey) headers.authorization = `Bearer ${provider.apiKey}`;
  return headers;
}

/** Claude on Bedrock (`anthropic.claude-…`, or an inference profile `us.anthropic.claude-…`, or its ARN). */
export function isClaude(upstreamModel: string): boolean {
  return /(^|[./])anthropic\.claude/.test(upstreamModel);
}

/** Amazon Nova (`amazon.nova-…`, `us.amazon.nova-…`). */
function isNova(upstreamModel: string): boolean {
  return /(^|[./])amazon\.nova/.test(upstreamModel);
}

/**
 * What a model takes beyond Converse's common shape: prompt caching's `cachePoint` (Claude 3.5
 * Haiku, 3.7 and later; Nova; another model refuses the request) and a tool result's `status`
 * (Claude and Nova).
 */
interface ConverseTraits {
  claude: boolean;
  caches: boolean;
  resultStatus: boolean;
}

function traitsOf(upstreamModel: string): ConverseTraits {
  const claude = isClaude(upstreamModel);
  const nova = isNova(upstreamModel);
  return { claude, caches: nova || (claude && !/claude-(instant|v2|3-(haiku|sonnet|opus)|3-5-sonnet)/.test(upstreamModel)), resultStatus: claude || nova };
}

const IMAGE_FORMATS: Readonly<Record<string, ConverseImageFormat>> = { 'image/png': 'png', 'image/jpeg': 'jpeg', 'image/jpg': 'jpeg', 'image/gif': 'gif', 'image/webp': 'webp' };

/**
 * Canonical → Bedrock Converse, one shape for every Bedrock chat model: system text top-level,
 * tool results as `toolResult` blocks of the next user turn (turns of one role merged, as
 * Converse wants them alternating), empty texts dropped (Converse refuses blank text), images
 * as bytes (the gateway inlines URLs first). `toolConfig` goes on every request whose history
 * holds tool blocks, tools or not: Converse refuses such a request without it. Claude's
 * thinking and top_k go in `additionalModelRequestFields`; a cache breakpoint is a `cachePoint`.
 */
export function buildConverseRequest(request: ChatRequest, provider: ProviderConfig): UpstreamRequest {
  const ignoredParams: string[] = [];
  const traits = traitsOf(request.upstreamModel);
  const claude = traits.claude;
  const system: NonNullable<ConverseRequest['system']> = [];
  for (const message of request.messages) {
    if (message.role !== 'system') continue;
    for (const part of message.content) {
      if (part.text !== '') system.push({ text: part.text });
      if (part.cacheControl && traits.caches) system.push(cachePoint());
    }
  }
  const body: ConverseRequest = { messages: convertMessages(request.messages, traits), inferenceConfig: { maxTokens: request.maxTokens } };
  if (request.temperature !== undefined) body.inferenceConfig.temperature = request.temperature;
  if (request.topP !== undefined) body.inferenceConfig.topP = request.topP;
  if (request.stop !== undefined && request.stop.length > 0) body.inferenceConfig.stopSequences = request.stop;
  const extra: Record<string, unknown> = {};
  if (request.topK !== undefined) {
    if (claude) extra.top_k = request.topK;
    else ignoredParams.push('top_k');
  }
  if (request.seed !== undefined) ignoredParams.push('seed');
  if (request.user !== undefined) ignoredParams.push('user');
  if (request.parallelToolCalls === false) ignoredParams.push('parallel_tool_calls');
  if (request.reasoning) {
    const thinking = claude ? thinkingField(request) : undefined;
    if (thinking) {
      extra.thinking = thinking;
      // Claude thinks only at temperature 1, and without top_k or top_p.
      delete body.inferenceConfig.temperature;
      delete body.inferenceConfig.topP;
      delete extra.top_k;
    } else ignoredParams.push('reasoning');
  }

  const toolConfig = convertTools(request, body.messages, traits);
  // Converse has no "none": the history's tools are declared, and the model may call them.
  if (request.toolChoice?.type === 'none' && toolConfig) ignoredParams.push('tool_choice');
  if (toolConfig) body.toolConfig = toolConfig;
  const format = request.responseFormat;
  if (format && format.type !== 'text') {
    // Converse has no JSON mode of its own for every model: an instruction, as for Claude with tools.
    const schema = format.type === 'json_schema' ? format.schema : { type: 'object' };
    system.push({ text: `Respond with only a JSON value that matches this JSON Schema, no other text:\n${JSON.stringify(schema)}` });
  }
  if (system.length > 0) body.system = system;
  if (Object.keys(extra).length > 0) body.additionalModelRequestFields = extra;
  return { url: bedrockUrl(provider, request.upstreamModel, request.stream ? 'converse-stream' : 'converse'), headers: providerHeaders(provider, bedrockHeaders), body, ignoredParams };
}

function cachePoint(): { cachePoint: { type: 'default' } } {
  return { cachePoint: { type: 'default' } };
}

function withCache(block: ConverseBlock, control: CacheControl | undefined, caches: boolean): ConverseBlock[] {
  return control && caches ? [block, cachePoint()] : [block];
}

function convertPart(part: ContentPart, caches: boolean): ConverseBlock[] {
  if (part.type === 'text') return part.text === '' ? [] : withCache({ text: part.text }, part.cacheControl, caches);
  if (part.source.kind !== 'base64') {
    throw new GatewayError({ status: 400, type: 'invalid_request_error', reason: 'unsupported_image', param: 'messages', message: 'Bedrock takes images as bytes: this image URL could not be inlined' });
  }
  const format = IMAGE_FORMATS[part.source.mediaType.toLowerCase()];
  if (!format) {
    throw new GatewayError({ status: 400, type: 'invalid_request_error', reason: 'unsupported_image', param: 'messages', message: `Bedrock takes png, jpeg, gif and webp images, not ${part.source.mediaType}` });
  }
  return withCache({ image: { format, source: { bytes: part.source.data } } }, part.cacheControl, caches);
}

function toolResultContent(content: ContentPart[]): ConverseToolResultContent[] {
  const out: ConverseToolResultContent[] = [];
  for (const part of content) {
    if (part.type === 'text') {
      if (part.text !== '') out.push({ text: part.text });
    } else for (const block of convertPart(part, false)) if ('image' in block) out.push({ image: block.image });
  }
  // Converse refuses a toolResult without content.
  return out.length > 0 ? out : [{ text: '(no output)' }];
}

function convertMessages(messages: readonly Message[], traits: ConverseTraits): ConverseMessage[] {
  const part = (content: ContentPart): ConverseBlock[] => convertPart(content, traits.caches);
  const out: ConverseMessage[] = [];
  const append = (role: ConverseMessage['role'], blocks: ConverseBlock[]): void => {
    if (blocks.length === 0) return;
    const last = out.at(-1);
    if (last && last.role === role) {
      // A turn's tool results come first (after an assistant's tool use).
      if (role === 'user' && blocks.some((block) => 'toolResult' in block)) {
        const results = last.content.filter((block) => 'toolResult' in block);
        const others = last.content.filter((block) => !('toolResult' in block));
        last.content = [...results, ...blocks, ...others];
      } else last.content.push(...blocks);
    } else out.push({ role, content: blocks });
  };
  for (const message of messages) {
    switch (message.role) {
      case 'system':
        break;
      case 'user':
        append('user', message.content.flatMap(part));
        break;
      case 'assistant': {
        const blocks: ConverseBlock[] = [];
        // Claude's own thinking opens its turn again (its signature proves it); others' is not its to read.
        if (traits.claude) {
          for (const block of replayedThinking(message.reasoning)) {
            if (block.type === 'thinking') blocks.push({ reasoningContent: { reasoningText: { text: block.thinking, signature: block.signature } } });
            else if (block.type === 'redacted_thinking') blocks.push({ reasoningContent: { redactedContent: block.data } });
          }
        }
        blocks.push(...message.content.flatMap(part));
        for (const call of message.toolCalls) blocks.push({ toolUse: { toolUseId: call.id, name: call.name, input: parseArguments(call.arguments) } });
        append('assistant', blocks);
        break;
      }
      case 'tool':
        append('user', [{ toolResult: { toolUseId: message.toolCallId, content: toolResultContent(message.content), ...(message.isError && traits.resultStatus ? { status: 'error' as const } : {}) } }]);
        break;
    }
  }
  // Converse wants the conversation to open with a user turn.
  if (out[0]?.role === 'assistant') out.unshift({ role: 'user', content: [{ text: '(continue)' }] });
  return out;
}

/**
 * The tools and the choice; and, for a history that holds tool blocks but a request without
 * tools (or with tool_choice none), the tools that history names, so that Converse takes it.
 */
function convertTools(request: ChatRequest, messages: ConverseMessage[], traits: ConverseTraits): ConverseRequest['toolConfig'] | undefined {
  const choice = request.toolChoice;
  const tools: ConverseTool[] = [];
  if (choice?.type !== 'none') {
    for (const tool of request.tools ?? []) {
      tools.push({ toolSpec: { name: tool.name, ...(tool.description ? { description: tool.description } : {}), inputSchema: { json: tool.parameters } } });
      if (tool.cacheControl && traits.caches) tools.push(cachePoint());
    }
  }
  if (tools.length === 0) {
    const named = new Set<string>();
    for (const message of messages) for (const block of message.content) if ('toolUse' in block) named.add(block.toolUse.name);
    const results = messages.some((message) => message.content.some((block) => 'toolResult' in block));
    if (named.size === 0 && !results) return undefined;
    for (const name of named.size > 0 ? named : new Set(['tool'])) tools.push({ toolSpec: { name, description: 'A tool this conversation used.', inputSchema: { json: { type: 'object' } } } });
    return { tools };
  }
  let toolChoice: ConverseToolChoice | undefined;
  if (choice?.type === 'required') toolChoice = { any: {} };
  else if (choice?.type === 'tool') toolChoice = { tool: { name: choice.name } };
  return toolChoice ? { tools, toolChoice } : { tools };
}
