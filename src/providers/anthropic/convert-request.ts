import type { ProviderConfig } from '../../config/types.js';
import type { CacheControl, ChatRequest, ContentPart, Message, SystemMessage } from '../../core/canonical.js';
import { providerHeaders } from '../shared/headers.js';
import { parseArguments } from '../shared/json.js';
import type { UpstreamRequest } from '../types.js';
import { reconcileThinking, replayedThinking, thinkingField } from './thinking.js';
import { JSON_TOOL_NAME, type AnthropicBlock, type AnthropicMessage, type AnthropicRequest, type AnthropicToolChoice } from './wire.js';

/**
 * Canonical → Anthropic Messages. System text goes top-level; tool results become
 * `tool_result` blocks in the next user turn (consecutive same-role turns are merged, so the
 * results of parallel calls share one message, first); empty text blocks are dropped
 * (Anthropic refuses them). JSON mode without client tools is a forced tool whose input is
 * the answer (docs.anthropic.com "JSON mode"); with client tools it is an instruction.
 */
export function buildAnthropicRequest(request: ChatRequest, provider: ProviderConfig): UpstreamRequest {
  const ignoredParams: string[] = [];
  const system = request.messages.filter((m): m is SystemMessage => m.role === 'system' && !m.inline).flatMap((m) => m.content);
  const body: AnthropicRequest = {
    model: request.upstreamModel,
    max_tokens: request.maxTokens,
    messages: convertMessages(request.messages.filter((m) => m.role !== 'system' || m.inline)),
  };
  const own = request.passthrough?.family === 'anthropic' ? request.passthrough.fields : undefined;
  const thinking = thinkingField(request);
  if (thinking) body.thinking = thinking;
  else if (request.reasoning) ignoredParams.push(request.reasoning.anthropic ? 'thinking' : 'reasoning');
  const systemBlocks = system.filter((p) => p.text !== '').map((p) => ({ type: 'text' as const, text: p.text, ...cache(p.cacheControl) }));

  // Anthropic takes temperature 0..1; a value above has no equivalent, so it is dropped and named.
  if (request.temperature !== undefined) {
    if (request.temperature <= 1) body.temperature = request.temperature;
    else ignoredParams.push('temperature');
  }
  if (request.topP !== undefined) body.top_p = request.topP;
  if (request.topK !== undefined) body.top_k = request.topK;
  if (request.stop !== undefined) body.stop_sequences = request.stop;
  if (request.seed !== undefined) ignoredParams.push('seed');
  if (request.user !== undefined) body.metadata = { user_id: request.user };
  if (request.messages.some((m) => m.role !== 'tool' && m.name !== undefined)) ignoredParams.push('messages[].name');

  const tools = request.tools ?? [];
  if (tools.length > 0) {
    body.tools = tools.map((tool) => ({
      name: tool.name,
      ...(tool.description !== undefined ? { description: tool.description } : {}),
      input_schema: tool.parameters,
      ...cache(tool.cacheControl),
      ...tool.anthropic,
    }));
  }
  const choice = convertToolChoice(request);
  if (choice) body.tool_choice = choice;

  const format = request.responseFormat;
  if (format && format.type !== 'text') {
    const schema = format.type === 'json_schema' ? format.schema : { type: 'object' };
    if (tools.length === 0) {
      body.tools = [{ name: JSON_TOOL_NAME, description: 'Respond with the answer as this tool\'s input.', input_schema: schema }];
      body.tool_choice = { type: 'tool', name: JSON_TOOL_NAME };
    } else {
      systemBlocks.push({ type: 'text', text: `Respond with only a JSON value that matches this JSON Schema, no other text:\n${JSON.stringify(schema)}` });
    }
  }
  reconcileThinking(body, ignoredParams, request.reasoning?.anthropic ? 'thinking' : 'reasoning');
  if (systemBlocks.length > 0) body.system = systemBlocks;
  if (request.stream) body.stream = true;
  if (own) {
    for (const [key, value] of Object.entries(own)) if (!(key in body)) body[key] = value;
  }
  return { url: `${provider.baseUrl}/v1/messages`, headers: withBeta(providerHeaders(provider, anthropicHeaders), request, ignoredParams), body, ignoredParams };
}

/**
 * Betas that change what a call costs beyond the catalog's prices (the 1M context window's
 * long-context rates, Claude calling remote MCP servers whose output the hold never saw):
 * an operator can enable them in the provider's own `headers`, a client cannot.
 */
const PRICED_BETAS = /^(context-1m-|mcp-client-)/;

/** The client's `anthropic-beta` values go to Claude with the provider's own (shared headers are copied, not changed). */
function withBeta(headers: Readonly<Record<string, string>>, request: ChatRequest, ignoredParams: string[]): Readonly<Record<string, string>> {
  const asked = request.passthrough?.family === 'anthropic' ? request.passthrough.headers?.['anthropic-beta'] : undefined;
  if (!asked) return headers;
  const betas = asked.split(',').filter((beta) => {
    if (!PRICED_BETAS.test(beta)) return true;
    ignoredParams.push(`anthropic-beta: ${beta}`);
    return false;
  });
  if (betas.length === 0) return headers;
  const own = headers['anthropic-beta'];
  return { ...headers, 'anthropic-beta': own ? `${own},${betas.join(',')}` : betas.join(',') };
}

function anthropicHeaders(provider: ProviderConfig): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'anthropic-version': provider.anthropicVersion ?? '2023-06-01',
    ...provider.headers,
  };
  if (provider.apiKey) headers['x-api-key'] = provider.apiKey;
  return headers;
}

function cache(control: CacheControl | undefined): { cache_control?: CacheControl } {
  return control ? { cache_control: control } : {};
}

function convertPart(part: ContentPart): AnthropicBlock | undefined {
  if (part.type === 'text') return part.text === '' ? undefined : { type: 'text', text: part.text, ...cache(part.cacheControl) };
  const source = part.source.kind === 'url' ? { type: 'url' as const, url: part.source.url } : { type: 'base64' as const, media_type: part.source.mediaType, data: part.source.data };
  return { type: 'image', source, ...cache(part.cacheControl) };
}

function blocksOf(message: Message): { role: 'user' | 'assistant' | 'system'; blocks: AnthropicBlock[] } {
  switch (message.role) {
    case 'system':
      return { role: 'system', blocks: message.content.map(convertPart).filter((b): b is AnthropicBlock => b !== undefined) };
    case 'user':
      return { role: 'user', blocks: message.content.map(convertPart).filter((b): b is AnthropicBlock => b !== undefined) };
    case 'assistant': {
      const blocks = replayedThinking(message.reasoning);
      for (const part of message.content) {
        const block = convertPart(part);
        if (block) blocks.push(block);
      }
      for (const call of message.toolCalls) blocks.push({ type: 'tool_use', id: call.id, name: call.name, input: parseArguments(call.arguments) });
      return { role: 'assistant', blocks };
    }
    case 'tool': {
      // A breakpoint on a tool result goes on the tool_result block itself.
      const control = message.content.find((p) => p.cacheControl)?.cacheControl;
      const content = message.content
        .map((part) => convertPart(control ? { ...part, cacheControl: undefined } : part))
        .filter((b): b is AnthropicBlock => b !== undefined);
      const only = content[0];
      const result: AnthropicBlock = {
        type: 'tool_result',
        tool_use_id: message.toolCallId,
        content: content.length === 1 && only?.type === 'text' ? only.text : content,
        ...(message.isError ? { is_error: true } : {}),
        ...cache(control),
      };
      return { role: 'user', blocks: [result] };
    }
  }
}

export function convertMessages(messages: Message[]): AnthropicMessage[] {
  const out: AnthropicMessage[] = [];
  for (const message of messages) {
    const { role, blocks } = blocksOf(message);
    if (blocks.length === 0) continue;
    const last = out.at(-1);
    if (last && last.role === role) {
      // Tool results must open the user turn that follows the tool calls.
      if (message.role === 'tool') {
        const firstOther = last.content.findIndex((b) => b.type !== 'tool_result');
        if (firstOther === -1) last.content.push(...blocks);
        else last.content.splice(firstOther, 0, ...blocks);
      } else last.content.push(...blocks);
    } else out.push({ role, content: blocks });
  }
  return out;
}

function convertToolChoice(request: ChatRequest): AnthropicToolChoice | undefined {
  const noParallel = request.parallelToolCalls === false && (request.tools?.length ?? 0) > 0 ? { disable_parallel_tool_use: true } : {};
  const choice = request.toolChoice;
  if (!choice) return Object.keys(noParallel).length > 0 ? { type: 'auto', ...noParallel } : undefined;
  switch (choice.type) {
    case 'auto':
      return { type: 'auto', ...noParallel };
    case 'none':
      return { type: 'none' };
    case 'required':
      return { type: 'any', ...noParallel };
    case 'tool':
      return { type: 'tool', name: choice.name, ...noParallel };
  }
}
