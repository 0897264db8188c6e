import type { IncomingMessage, ServerResponse } from 'node:http';
import type { StreamPlan } from './scenario.js';

/**
 * Azure OpenAI, as the simulator serves it under `/azure` (a resource endpoint is
 * `${sim.url}/azure`): the deployments API, `/openai/deployments/{deployment}/{operation}`
 * with a required `api-version`, and the v1 API, `/openai/v1/{operation}`; the key in `api-key`
 * (the v1 API also takes `Authorization: Bearer`). A checked request goes on to the OpenAI
 * handlers as the OpenAI request it is; Azure's additions (the prompt filter chunk, content
 * filter results, `retry-after-ms`) are put on the answers they give.
 * A deployment whose name starts with `missing` does not exist (404 DeploymentNotFound).
 */

export interface AzureCall {
  api: 'deployments' | 'v1';
  deployment?: string;
  apiVersion?: string;
}

const OPERATIONS = new Set(['chat/completions', 'embeddings', 'audio/speech', 'audio/transcriptions', 'images/generations']);

const ACCESS_DENIED =
  'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.';

function answer(res: ServerResponse, status: number, code: string, message: string): undefined {
  const text = JSON.stringify({ error: { code, message } });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), 'apim-request-id': crypto.randomUUID() });
  res.end(text);
  return undefined;
}

/** Checks an Azure request and returns it as the OpenAI request it is, or answers Azure's refusal (undefined). */
export function azureGate(req: IncomingMessage, res: ServerResponse, url: URL, apiKey: string): { url: URL; azure: AzureCall } | undefined {
  const deployments = /^\/azure\/openai\/deployments\/([^/]+)\/(.+)$/.exec(url.pathname);
  const v1 = /^\/azure\/openai\/v1\/(.+)$/.exec(url.pathname);
  const operation = deployments?.[2] ?? v1?.[1];
  if (!operation || !OPERATIONS.has(operation)) return answer(res, 404, '404', 'Resource not found');
  const key = req.headers['api-key'];
  const bearer = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1];
  const keyOk = key === apiKey || (v1 !== null && bearer === apiKey);
  if (!keyOk) return answer(res, 401, '401', ACCESS_DENIED);
  const azure: AzureCall = { api: deployments ? 'deployments' : 'v1' };
  if (deployments) {
    const apiVersion = url.searchParams.get('api-version');
    if (!apiVersion) return answer(res, 404, '404', 'Resource not found');
    if (!/^\d{4}-\d{2}-\d{2}(-preview)?$/.test(apiVersion)) return answer(res, 400, 'BadRequest', 'API version not supported');
    const deployment = decodeURIComponent(deployments[1] ?? '');
    if (deployment.startsWith('missing')) {
      return answer(res, 404, 'DeploymentNotFound', 'The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.');
    }
    azure.deployment = deployment;
    azure.apiVersion = apiVersion;
  } else if (url.searchParams.has('api-version')) {
    return answer(res, 400, 'BadRequest', 'The v1 API does not take an api-version query parameter');
  }
  // The OpenAI handlers check a bearer key: the one Azure's was checked against.
  req.headers.authorization = `Bearer ${apiKey}`;
  return { url: new URL(`/v1/${operation}`, url), azure };
}

const NO_FILTER = {
  hate: { filtered: false, severity: 'safe' },
  self_harm: { filtered: false, severity: 'safe' },
  sexual: { filtered: false, severity: 'safe' },
  violence: { filtered: false, severity: 'safe' },
};

/** A chat completion as Azure returns it: the prompt's and each choice's filter results. */
export function azureCompletion<T extends { choices: unknown[] }>(completion: T): T & { prompt_filter_results: unknown[] } {
  return {
    ...completion,
    choices: completion.choices.map((choice) => ({ ...(choice as object), content_filter_results: NO_FILTER })),
    prompt_filter_results: [{ prompt_index: 0, content_filter_results: NO_FILTER }],
  };
}

/** A chat stream as Azure sends it: first a chunk with no choices carrying the prompt's filter results, then each chunk's choices with theirs. */
export function azureStream(plan: StreamPlan): StreamPlan {
  const first = { choices: [], created: 0, id: '', model: '', object: '', prompt_filter_results: [{ prompt_index: 0, content_filter_results: NO_FILTER }] };
  const events = plan.events.map((event) => {
    try {
      const chunk = JSON.parse(event.data) as { choices?: Array<Record<string, unknown>> };
      if (!Array.isArray(chunk.choices) || chunk.choices.length === 0) return event;
      return { ...event, data: JSON.stringify({ ...chunk, choices: chunk.choices.map((choice) => ({ ...choice, content_filter_results: choice.finish_reason ? {} : NO_FILTER })) }) };
    } catch {
      return event;
    }
  });
  return { ...plan, events: [{ data: JSON.stringify(first) }, ...events] };
}
