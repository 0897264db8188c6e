import { createHash } from 'node:crypto';
import type { ContentPart, Message, ToolDefinition } from '../canonical.js';
import type { ChatDraft } from '../call-context.js';

/**
 * What identifies a chat call to the response cache. The exact key hashes everything that can
 * change the answer: the model, every message, the tools, the sampling parameters and the
 * extra fields passed to the provider. Not in it: `stream` (a hit is replayed in either form),
 * the output limit (an answer that ended on its own fits any limit at least its length: the
 * cache checks that at lookup, so /v1/messages' required max_tokens does not split entries),
 * `user`, prompt-caching breakpoints (`cache_control` changes the price, not the answer) and
 * the wire format (a call cached through /v1/messages answers /v1/chat/completions).
 *
 * The semantic tier compares only the last user message by meaning; everything else must be
 * identical, so its partition hashes the same fields minus that message. A paraphrased
 * question matches an earlier one only after the same system prompt and the same earlier
 * turns, to the same model with the same parameters.
 */
export interface CacheKeys {
  exact: string;
  /** Absent when the call cannot be matched by meaning (no final user text, images, tools). */
  semantic?: { partition: string; prompt: string };
}

/** `scope` is the account (or key) id: no entry is ever found under another scope. */
export function cacheKeys(draft: ChatDraft, modelId: string, scope: string): CacheKeys {
  const params = stable({
    tools: draft.tools?.map(toolShape),
    tool_choice: draft.toolChoice,
    parallel_tool_calls: draft.parallelToolCalls,
    temperature: draft.temperature,
    top_p: draft.topP,
    top_k: draft.topK,
    stop: draft.stop,
    seed: draft.seed,
    response_format: draft.responseFormat,
    extra: draft.passthrough?.fields,
    // Asked reasoning changes the answer (thinking blocks, a reasoning item), and so do the
    // hosted tools a native upstream runs (they are not in `tools`).
    reasoning: draft.reasoning,
    hosted: draft.droppedTools,
  });
  const messages = draft.messages.map(messageShape);
  const exact = digest(['exact', scope, modelId, params, stable(messages)]);
  const last = draft.messages[draft.messages.length - 1];
  if (!last || last.role !== 'user' || draft.tools?.length) return { exact };
  let prompt = '';
  for (const part of last.content) {
    if (part.type !== 'text') return { exact };
    prompt += prompt ? `\n${part.text}` : part.text;
  }
  if (prompt.trim() === '') return { exact };
  const partition = digest(['semantic', scope, modelId, params, stable(messages.slice(0, -1))]);
  return { exact, semantic: { partition, prompt } };
}

function digest(parts: string[]): string {
  return createHash('sha256').update(parts.join('\u0000')).digest('base64url');
}

function partShape(part: ContentPart): unknown {
  return part.type === 'text' ? ['t', part.text] : ['i', part.source, part.detail];
}

function messageShape(message: Message): unknown {
  switch (message.role) {
    case 'system':
      // New fields join the shape only when set, so that entries stored before them still match.
      return message.inline ? ['s', message.name, message.content.map(partShape), 'inline'] : ['s', message.name, message.content.map(partShape)];
    case 'user':
      return ['u', message.name, message.content.map(partShape)];
    case 'assistant': {
      const shape: unknown[] = ['a', message.name, message.content.map(partShape), message.toolCalls.map((call) => [call.id, call.name, call.arguments])];
      if (message.reasoning?.length) shape.push(message.reasoning.map((block) => [block.family, block.text]));
      return shape;
    }
    case 'tool':
      return ['r', message.toolCallId, message.isError, message.content.map(partShape)];
  }
}

function toolShape(tool: ToolDefinition): unknown {
  return tool.anthropic ? [tool.name, tool.description, tool.parameters, tool.strict, tool.anthropic] : [tool.name, tool.description, tool.parameters, tool.strict];
}

/** JSON with object keys sorted (at every depth) and undefined dropped: equal values, equal text. */
export function stable(value: unknown): string {
  if (value === undefined) return 'null';
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(stable).join(',')}]`;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record)
    .filter((key) => record[key] !== undefined)
    .sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${stable(record[key])}`).join(',')}}`;
}
