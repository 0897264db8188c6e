// undici's connector factory from its own module, like the Agent in src/types/undici-internals.d.ts:
// the package index would load fetch, WebSocket and the rest (src/providers/shared/http-agent.ts).
declare module 'undici/lib/core/connect.js' {
  import { buildConnector } from 'undici';
  export default buildConnector;
}
