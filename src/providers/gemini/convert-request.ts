import type { ProviderConfig } from '../../config/types.js';
import type { ChatRequest, ContentPart, Message } from '../../core/canonical.js';
import { providerHeaders } from '../shared/headers.js';
import { parseArguments } from '../shared/json.js';
import type { UpstreamRequest } from '../types.js';
import { toGeminiSchema } from './schema.js';
import { thinkingConfig } from './thinking.js';
import type { GeminiContent, GeminiPart, GeminiRequest } from './wire.js';

/**
 * Canonical → Gemini generateContent. System text (a system turn among the messages too) goes to systemInstruction; assistant turns
 * are role "model"; tool results are functionResponse parts in a user turn, named after the
 * call they answer (Gemini matches results by name); consecutive same-role turns are merged.
 */
export function buildGeminiRequest(request: ChatRequest, provider: ProviderConfig): UpstreamRequest {
  const ignoredParams: string[] = [];
  const system = request.messages.filter((m) => m.role === 'system').flatMap((m) => m.content).filter((p) => p.type === 'text' && p.text !== '');
  const body: GeminiRequest = {
    contents: convertContents(request.messages),
    generationConfig: { maxOutputTokens: request.maxTokens },
  };
  if (system.length > 0) body.systemInstruction = { parts: system.map((p) => ({ text: p.type === 'text' ? p.text : '' })) };
  const config = body.generationConfig;
  if (request.temperature !== undefined) config.temperature = request.temperature;
  if (request.topP !== undefined) config.topP = request.topP;
  if (request.topK !== undefined) config.topK = request.topK;
  if (request.stop !== undefined) config.stopSequences = request.stop;
  if (request.seed !== undefined) config.seed = request.seed;
  if (request.user !== undefined) ignoredParams.push('user');
  if (request.messages.some((m) => m.role !== 'tool' && m.name !== undefined)) ignoredParams.push('messages[].name');
  if (request.parallelToolCalls === false) ignoredParams.push('parallel_tool_calls');
  if (request.tools && request.tools.length > 0) {
    body.tools = [
      {
        functionDeclarations: request.tools.map((tool) => ({
          name: tool.name,
          ...(tool.description !== undefined ? { description: tool.description } : {}),
          parameters: toGeminiSchema(tool.parameters),
        })),
      },
    ];
  }
  const choice = request.toolChoice;
  if (choice) {
    body.toolConfig = {
      functionCallingConfig:
        choice.type === 'tool'
          ? { mode: 'ANY', allowedFunctionNames: [choice.name] }
          : { mode: choice.type === 'required' ? 'ANY' : choice.type === 'none' ? 'NONE' : 'AUTO' },
    };
  }
  if (request.reasoning) {
    const thinking = thinkingConfig(request.reasoning, request.upstreamModel);
    if (thinking) config.thinkingConfig = thinking;
    else ignoredParams.push(request.reasoning.anthropic ? 'thinking' : 'reasoning');
  }
  const format = request.responseFormat;
  if (format && format.type !== 'text') {
    config.responseMimeType = 'application/json';
    if (format.type === 'json_schema') config.responseSchema = toGeminiSchema(format.schema);
  }
  const method = request.stream ? 'streamGenerateContent?alt=sse' : 'generateContent';
  return { url: `${provider.baseUrl}/v1beta/models/${encodeURIComponent(request.upstreamModel)}:${method}`, headers: providerHeaders(provider, geminiHeaders), body, ignoredParams };
}

export function geminiHeaders(provider: ProviderConfig): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...provider.headers };
  if (provider.apiKey) headers['x-goog-api-key'] = provider.apiKey;
  return headers;
}

function convertPart(part: ContentPart): GeminiPart | undefined {
  if (part.type === 'text') return part.text === '' ? undefined : { text: part.text };
  // The gateway inlines http(s) images before this (Gemini fetches only its own file URIs).
  if (part.source.kind === 'base64') return { inlineData: { mimeType: part.source.mediaType, data: part.source.data } };
  return { fileData: { fileUri: part.source.url } };
}

/** A tool result as the object Gemini wants in functionResponse.response. */
function responseObject(content: ContentPart[], isError: boolean | undefined): Record<string, unknown> {
  const text = content.map((p) => (p.type === 'text' ? p.text : '')).join('');
  if (isError) return { error: text };
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
    return { output: parsed };
  } catch {
    return { output: text };
  }
}

export function convertContents(messages: Message[]): GeminiContent[] {
  const toolNames = new Map<string, string>();
  const out: GeminiContent[] = [];
  const append = (role: 'user' | 'model', parts: GeminiPart[]): void => {
    if (parts.length === 0) return;
    const last = out.at(-1);
    if (last && last.role === role) last.parts.push(...parts);
    else out.push({ role, parts });
  };
  for (const message of messages) {
    switch (message.role) {
      case 'system':
        break;
      case 'user':
        append('user', message.content.map(convertPart).filter((p): p is GeminiPart => p !== undefined));
        break;
      case 'assistant': {
        const parts = message.content.map(convertPart).filter((p): p is GeminiPart => p !== undefined);
        for (const call of message.toolCalls) {
          toolNames.set(call.id, call.name);
          parts.push({ functionCall: { name: call.name, args: parseArguments(call.arguments) } });
        }
        append('model', parts);
        break;
      }
      case 'tool': {
        // A functionResponse holds JSON only: images the tool returned follow it in the same turn.
        const images = message.content.filter((part) => part.type === 'image').map(convertPart).filter((p): p is GeminiPart => p !== undefined);
        append('user', [{ functionResponse: { name: toolNames.get(message.toolCallId) ?? message.toolCallId, response: responseObject(message.content, message.isError) } }, ...images]);
        break;
      }
    }
  }
  return out;
}
