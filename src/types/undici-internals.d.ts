// undici's modules for its Agent and its request() API on their own: the package index also
// loads fetch, WebSocket, EventSource, caches and mocks (about 8 MB of idle RSS) that the
// gateway never uses. See src/providers/shared/http-agent.ts.
declare module 'undici/lib/dispatcher/agent.js' {
  import { Agent } from 'undici';
  export default Agent;
}

declare module 'undici/lib/api/api-request.js' {
  import type { Dispatcher } from 'undici';
  function request(this: Dispatcher, options: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData>;
  export default request;
}
