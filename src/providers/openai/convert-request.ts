import type { ProviderConfig } from '../../config/types.js';
import type { ChatRequest, ContentPart, Message, ResponseFormat, ToolChoice } from '../../core/canonical.js';
import { providerHeaders } from '../shared/headers.js';
import { openAiUrl, setOpenAiCredential } from './endpoint.js';
import type { UpstreamRequest } from '../types.js';
import { effortOf, reasons } from './reasoning.js';
import type { OpenAiChatRequest, OpenAiContentPart, OpenAiMessage, OpenAiToolChoice } from './wire.js';

/** Canonical → OpenAI chat completions, for any OpenAI-compatible base URL. */
export function buildOpenAiChatRequest(request: ChatRequest, provider: ProviderConfig): UpstreamRequest {
  const body: OpenAiChatRequest = {
    model: request.upstreamModel,
    messages: convertMessages(request.messages),
  };
  body[provider.maxTokensParam] = request.maxTokens;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.topP !== undefined) body.top_p = request.topP;
  if (request.stop !== undefined) body.stop = request.stop;
  if (request.seed !== undefined) body.seed = request.seed;
  if (request.user !== undefined) body.user = request.user;
  if (request.tools !== undefined) {
    body.tools = request.tools.map((tool) => ({
      type: 'function',
      function: {
        name: tool.name,
        ...(tool.description !== undefined ? { description: tool.description } : {}),
        parameters: tool.parameters,
        ...(tool.strict !== undefined ? { strict: tool.strict } : {}),
      },
    }));
  }
  if (request.toolChoice !== undefined) body.tool_choice = convertToolChoice(request.toolChoice);
  if (request.parallelToolCalls !== undefined && request.tools !== undefined) body.parallel_tool_calls = request.parallelToolCalls;
  if (request.responseFormat !== undefined) body.response_format = convertResponseFormat(request.responseFormat);
  const ignoredParams: string[] = [];
  if (request.reasoning) {
    const effort = reasons(request.upstreamModel) ? effortOf(request.reasoning, request.upstreamModel) : undefined;
    if (effort) body.reasoning_effort = effort;
    else if (!reasons(request.upstreamModel)) ignoredParams.push(request.reasoning.anthropic ? 'thinking' : 'reasoning');
  }
  if (request.stream) {
    body.stream = true;
    // Always ask for usage: the gateway bills from it, whatever the client asked for.
    body.stream_options = { include_usage: true };
  }
  // Fields of the same wire family that the canonical form does not model go through as they are.
  if (request.passthrough?.family === 'openai') {
    for (const [key, value] of Object.entries(request.passthrough.fields)) if (!(key in body)) body[key] = value;
  }
  return { url: openAiUrl(provider, '/chat/completions', request.upstreamModel), headers: providerHeaders(provider, openAiHeaders), body, ignoredParams };
}

export function openAiHeaders(provider: ProviderConfig): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...provider.headers };
  setOpenAiCredential(headers, provider);
  return headers;
}

function textOf(parts: ContentPart[]): string {
  return parts.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

function convertPart(part: ContentPart): OpenAiContentPart {
  if (part.type === 'text') return { type: 'text', text: part.text };
  const url = part.source.kind === 'url' ? part.source.url : `data:${part.source.mediaType};base64,${part.source.data}`;
  return { type: 'image_url', image_url: part.detail ? { url, detail: part.detail } : { url } };
}

/**
 * The messages in order. Tool messages carry text only on this wire: images a tool returned
 * follow the turn's tool messages as one user message (tool messages must directly follow
 * the call, so they cannot be split).
 */
export function convertMessages(messages: readonly Message[]): OpenAiMessage[] {
  const out: OpenAiMessage[] = [];
  let images: OpenAiContentPart[] = [];
  const flush = (): void => {
    if (images.length === 0) return;
    out.push({ role: 'user', content: [{ type: 'text', text: 'Images the tool calls above returned:' }, ...images] });
    images = [];
  };
  for (const message of messages) {
    if (message.role !== 'tool') flush();
    out.push(convertMessage(message));
    if (message.role === 'tool') for (const part of message.content) if (part.type === 'image') images.push(convertPart(part));
  }
  flush();
  return out;
}

export function convertMessage(message: Message): OpenAiMessage {
  const converted = convertMessageContent(message);
  if (message.role !== 'tool' && message.name !== undefined && converted.role !== 'tool') converted.name = message.name;
  return converted;
}

function convertMessageContent(message: Message): OpenAiMessage {
  switch (message.role) {
    case 'system':
      return { role: 'system', content: textOf(message.content) };
    case 'user': {
      const only = message.content[0];
      if (message.content.length === 1 && only?.type === 'text') return { role: 'user', content: only.text };
      return { role: 'user', content: message.content.map(convertPart) };
    }
    case 'assistant': {
      const text = textOf(message.content);
      const out: OpenAiMessage = { role: 'assistant', content: text === '' && message.toolCalls.length > 0 ? null : text };
      if (message.toolCalls.length > 0) {
        out.tool_calls = message.toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }));
      }
      return out;
    }
    case 'tool':
      // Tool messages carry text only on the OpenAI wire.
      return { role: 'tool', tool_call_id: message.toolCallId, content: textOf(message.content) };
  }
}

function convertToolChoice(choice: ToolChoice): OpenAiToolChoice {
  if (choice.type === 'tool') return { type: 'function', function: { name: choice.name } };
  return choice.type;
}

function convertResponseFormat(format: ResponseFormat): Record<string, unknown> {
  if (format.type !== 'json_schema') return { type: format.type };
  return {
    type: 'json_schema',
    json_schema: {
      name: format.name,
      schema: format.schema,
      ...(format.strict !== undefined ? { strict: format.strict } : {}),
      ...(format.description !== undefined ? { description: format.description } : {}),
    },
  };
}
