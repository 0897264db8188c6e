import type { ProviderConfig } from '../config/types.js';
import { SigV4Signer } from './bedrock/sigv4.js';
import type { Authenticator, TokenPost } from './types.js';
import { ServiceAccountTokens } from './vertex/token.js';

/**
 * The credential step of a provider's upstream requests, when it is more than a header its
 * family sets: Bedrock with IAM credentials signs each request (SigV4); Vertex sends an OAuth2
 * access token exchanged for a signed assertion of its service account. Families stay unaware
 * of both.
 */
export function authenticatorFor(provider: ProviderConfig, post: TokenPost): Authenticator | undefined {
  const credentials = provider.bedrock?.credentials;
  if (provider.type === 'bedrock' && credentials && provider.bedrock) return new SigV4Signer(provider.bedrock.region, credentials);
  const account = provider.vertex?.serviceAccount;
  if (provider.type === 'vertex' && account) return new ServiceAccountTokens(provider.name, account, post);
  return undefined;
}
