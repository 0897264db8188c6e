/** The Bedrock Converse API's request shapes (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html). */

export type ConverseImageFormat = 'png' | 'jpeg' | 'gif' | 'webp';

export type ConverseToolResultContent = { text: string } | { json: unknown } | { image: ConverseImage };

export interface ConverseImage {
  format: ConverseImageFormat;
  source: { bytes: string };
}

export type ConverseBlock =
  | { text: string }
  | { image: ConverseImage }
  | { toolUse: { toolUseId: string; name: string; input: unknown } }
  | { toolResult: { toolUseId: string; content: ConverseToolResultContent[]; status?: 'success' | 'error' } }
  | { reasoningContent: { reasoningText: { text: string; signature?: string } } | { redactedContent: string } }
  | { cachePoint: { type: 'default' } };

export interface ConverseMessage {
  role: 'user' | 'assistant';
  content: ConverseBlock[];
}

export interface ConverseTool {
  toolSpec?: { name: string; description?: string; inputSchema: { json: unknown } };
  cachePoint?: { type: 'default' };
}

export type ConverseToolChoice = { auto: Record<string, never> } | { any: Record<string, never> } | { tool: { name: string } };

export interface ConverseRequest {
  messages: ConverseMessage[];
  system?: Array<{ text: string } | { cachePoint: { type: 'default' } }>;
  inferenceConfig: { maxTokens: number; temperature?: number; topP?: number; stopSequences?: string[] };
  toolConfig?: { tools: ConverseTool[]; toolChoice?: ConverseToolChoice };
  additionalModelRequestFields?: Record<string, unknown>;
}
