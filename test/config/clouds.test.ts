import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { providerRank } from '../../src/config/clouds.js';
import { buildConfig } from '../../src/config/load.js';
import { Catalog } from '../../src/core/catalog.js';
import { build, problemsOf } from '../support/config.js';
import { tempDir } from '../support/gateway.js';

/** The cloud provider types' settings: Bedrock's region and credentials, Vertex's project and key file. */

const PEM = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const KEY_FILE = { type: 'service_account', project_id: 'my-project', private_key_id: 'abc', private_key: PEM, client_email: 'gw@my-project.iam.gserviceaccount.com', token_uri: 'https://oauth2.example.test/token' };

t.test('the defaults: both clouds from their SDKs\' variables, a 503 naming them when unset', async (t) => {
  const unset = build({});
  t.match(unset.providers.bedrock, { type: 'bedrock', baseUrl: 'https://bedrock-runtime.us-east-1.amazonaws.com', bedrock: { region: 'us-east-1' }, apiKeyEnv: 'AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY' });
  t.match(unset.providers.vertex, { type: 'vertex', baseUrl: 'https://aiplatform.googleapis.com', vertex: { region: 'global' }, apiKeyEnv: 'GOOGLE_CLOUD_PROJECT and GOOGLE_APPLICATION_CREDENTIALS' });
  const dir = tempDir('clouds-');
  t.teardown(dir.remove);
  const file = join(dir.path, 'sa.json');
  writeFileSync(file, JSON.stringify(KEY_FILE));
  const set = build({}, { AWS_REGION: 'eu-west-1', AWS_ACCESS_KEY_ID: 'AKID', AWS_SECRET_ACCESS_KEY: 'secret', AWS_SESSION_TOKEN: 'token', GOOGLE_CLOUD_PROJECT: 'my-project', GOOGLE_CLOUD_LOCATION: 'europe-west4', GOOGLE_APPLICATION_CREDENTIALS: file });
  t.same(set.providers.bedrock?.bedrock, { region: 'eu-west-1', credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret', sessionToken: 'token' } });
  t.equal(set.providers.bedrock?.baseUrl, 'https://bedrock-runtime.eu-west-1.amazonaws.com');
  t.equal(set.providers.bedrock?.apiKeyEnv, undefined);
  t.equal(set.providers.vertex?.baseUrl, 'https://europe-west4-aiplatform.googleapis.com', 'a regional host');
  t.match(set.providers.vertex?.vertex, { project: 'my-project', region: 'europe-west4', serviceAccount: { clientEmail: KEY_FILE.client_email, tokenUri: 'https://oauth2.example.test/token', privateKeyId: 'abc' } });
  t.equal(set.providers.vertex?.apiKeyEnv, undefined);
  t.ok(set.models.some((m) => m.id === 'bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0'), 'the catalog carries Bedrock models');
  t.ok(set.models.some((m) => m.id === 'vertex/claude-sonnet-4-5@20250929'), 'and Vertex models, @ and all');
});

t.test('a Bedrock API key instead of IAM credentials', async (t) => {
  const config = build({ providers: { bedrock: { api_key: 'ABSK-key' } } }, { AWS_ACCESS_KEY_ID: 'AKID', AWS_SECRET_ACCESS_KEY: 'secret' });
  t.same(config.providers.bedrock?.apiKeys, ['ABSK-key']);
  t.equal(config.providers.bedrock?.bedrock?.credentials, undefined, "the user's api_key replaces the default's IAM credentials");
  t.match(problemsOf({ providers: { b: { type: 'bedrock', region: 'us-east-1', api_key: 'k', access_key_id: 'AKID', secret_access_key: 's' } } }), [/providers\.b\.api_key: set a Bedrock API key or access_key_id and secret_access_key, not both/]);
  t.equal(build({ providers: { b: { type: 'bedrock', region: 'us-west-2', api_key: 'k', base_url: 'https://vpce-1.bedrock-runtime.us-west-2.vpce.amazonaws.com' } } }).providers.b?.baseUrl, 'https://vpce-1.bedrock-runtime.us-west-2.vpce.amazonaws.com', 'a VPC endpoint');
});

t.test('every Bedrock mistake named by its path and rule', async (t) => {
  t.same(problemsOf({ providers: { b: { type: 'bedrock', access_key_id: 'AKID', secret_access_key: 's' } } }), ['providers.b.region: is required (the AWS region of the Bedrock runtime, e.g. us-east-1)']);
  t.same(problemsOf({ providers: { b: { type: 'bedrock', region: 'US East', access_key_id: 'AKID', secret_access_key: 's' } } }), ['providers.b.region: must be an AWS region like us-east-1']);
  t.same(problemsOf({ providers: { b: { type: 'bedrock', region: 'us-east-1', access_key_id: 'AKID' } } }), ['providers.b.secret_access_key: is required with access_key_id']);
  t.same(problemsOf({ providers: { b: { type: 'bedrock', region: 'us-east-1' } } }), ['providers.b.access_key_id: is required: access_key_id and secret_access_key (SigV4), or api_key (a Bedrock API key)']);
  t.same(problemsOf({ providers: { o: { type: 'openai', base_url: 'https://x.test/v1', api_key: 'k', region: 'us-east-1', project: 'p' } } }), ['providers.o.region: only applies to providers of type bedrock or vertex', 'providers.o.project: only applies to providers of type vertex']);
});

t.test('Vertex: the key file read and checked at startup', async (t) => {
  const dir = tempDir('vertex-');
  t.teardown(dir.remove);
  const file = join(dir.path, 'sa.json');
  writeFileSync(file, JSON.stringify(KEY_FILE));
  const config = buildConfig({ providers: { v: { type: 'vertex', project: 'my-project', region: 'us-central1', credentials: 'sa.json' } } }, { env: {}, baseDir: dir.path, source: 'x.yaml' });
  t.equal(config.providers.v?.vertex?.serviceAccount?.privateKey, PEM, 'a path relative to the config file');
  t.equal(config.providers.v?.baseUrl, 'https://us-central1-aiplatform.googleapis.com');
  const inline = build({ providers: { v: { type: 'vertex', project: 'my-project', region: 'global', credentials: JSON.stringify(KEY_FILE) } } });
  t.equal(inline.providers.v?.vertex?.serviceAccount?.clientEmail, KEY_FILE.client_email, 'or the JSON itself');
  t.equal(inline.providers.v?.baseUrl, 'https://aiplatform.googleapis.com', 'global has no region prefix');

  const vertex = (credentials: string, extra: Record<string, unknown> = {}) => problemsOf({ providers: { v: { type: 'vertex', project: 'my-project', credentials, ...extra } } });
  t.match(vertex('/nonexistent/sa.json'), [/^providers\.v\.credentials: cannot read the key file \/nonexistent\/sa\.json \(ENOENT\)$/]);
  t.same(vertex('{"type": "authorized_user"}'), ['providers.v.credentials: must be a service-account key file (its "type" is "service_account"); user credentials and other kinds are not supported']);
  t.same(vertex('{not json'), ['providers.v.credentials: must be a service-account key file (JSON); this is not JSON']);
  t.same(vertex(JSON.stringify({ ...KEY_FILE, private_key: 'not a key' })), ['providers.v.credentials: the key file has no RSA private_key in PEM form']);
  t.same(vertex(JSON.stringify({ ...KEY_FILE, token_uri: 'ftp://x' })), ["providers.v.credentials: the key file's token_uri must be an http(s) URL"]);
  t.same(vertex(JSON.stringify(KEY_FILE), { project: 'My Project' }), ['providers.v.project: must be a Google Cloud project id (lowercase letters, digits and hyphens; a domain-scoped one as domain:project)']);
  t.same(vertex(JSON.stringify(KEY_FILE), { region: 'mars' }), ['providers.v.region: must be a Google Cloud region like us-central1, or global']);
  t.same(problemsOf({ providers: { v: { type: 'vertex', project: 'my-project' } } }), ["providers.v.credentials: is required: a service-account key file's path (or its JSON)"]);
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  t.same(vertex(JSON.stringify({ ...KEY_FILE, private_key: ec })), ['providers.v.credentials: the key file has no RSA private_key in PEM form'], 'an EC key cannot sign RS256');
  const pasted = Buffer.from(JSON.stringify(KEY_FILE)).toString('base64');
  const [problem] = vertex(pasted);
  t.notMatch(problem, pasted.slice(0, 40), 'a pasted key is not echoed');
  t.match(problem, /a value of \d+ characters that is neither a path nor JSON/);
  const fromFile = build({ providers: { v: { type: 'vertex', credentials: JSON.stringify(KEY_FILE) } } });
  t.equal(fromFile.providers.v?.vertex?.project, 'my-project', "the project from the key file's project_id");
  t.equal(build({ providers: { v: { type: 'vertex', project: 'example.com:my-project', credentials: JSON.stringify(KEY_FILE) } } }).providers.v?.vertex?.project, 'example.com:my-project', 'a domain-scoped project');
});

t.test("the default providers never stop the daemon over the ambient environment", async (t) => {
  const dir = tempDir('ambient-');
  t.teardown(dir.remove);
  const adc = join(dir.path, 'adc.json');
  writeFileSync(adc, JSON.stringify({ type: 'authorized_user', client_id: 'x', client_secret: 'y', refresh_token: 'z' }));
  const config = build({ providers: { openai: { api_key: 'k' } } }, { GOOGLE_APPLICATION_CREDENTIALS: adc, GOOGLE_CLOUD_PROJECT: 'my-project', AWS_REGION: 'nowhere', AWS_ACCESS_KEY_ID: 'AKID', AWS_SECRET_ACCESS_KEY: 's' });
  t.match(config.providers.vertex?.apiKeyEnv, /valid settings \(providers\.vertex\.credentials: must be a service-account key file/, "gcloud's user credentials: Vertex uncallable, saying why");
  t.match(config.providers.bedrock?.apiKeyEnv, /providers\.bedrock\.region: must be an AWS region/);
  t.same(problemsOf({ providers: { vertex: { type: 'vertex', project: 'my-project', credentials: adc } } }), ['providers.vertex.credentials: must be a service-account key file (its "type" is "service_account"); user credentials and other kinds are not supported'], 'written by the user: a problem');
  t.equal(build({}, { AWS_REGION: 'eusc-de-east-1' }).providers.bedrock?.bedrock?.region, 'eusc-de-east-1', 'the European Sovereign Cloud');
  t.equal(build({}, { AWS_REGION: 'cn-north-1' }).providers.bedrock?.baseUrl, 'https://bedrock-runtime.cn-north-1.amazonaws.com.cn', "China's domain");
  const other = build({ providers: { bedrock: { type: 'openai', base_url: 'https://bag.internal/api/v1', api_key: 'k' } } });
  t.match(other.providers.bedrock, { type: 'openai', baseUrl: 'https://bag.internal/api/v1' }, 'a provider of another type under a default name takes nothing of the default');
});

t.test('a model of a kind the cloud does not serve is refused by name', async (t) => {
  t.match(problemsOf({ providers: { b: { type: 'bedrock', region: 'us-east-1', api_key: 'k' } }, models: [{ id: 'b/tts', name: 'x', type: 'speech', context_window: 10, input_cost_per_1m_chars: 1 }] }), [/models\[0\]/]);
});

t.test("a short name a vendor and a cloud share: the callable one, the vendor's own first", async (t) => {
  const dir = tempDir('vertex-rank-');
  t.teardown(dir.remove);
  const file = join(dir.path, 'sa.json');
  writeFileSync(file, JSON.stringify(KEY_FILE));
  const catalogOf = (env: NodeJS.ProcessEnv) => {
    const config = build({}, env);
    return new Catalog(config.models, config.aliases, (name) => providerRank(config.providers[name]));
  };
  const vertexEnv = { GOOGLE_CLOUD_PROJECT: 'my-project', GOOGLE_APPLICATION_CREDENTIALS: file };
  t.equal(catalogOf({ GEMINI_API_KEY: 'k' }).resolve('gemini-2.5-flash', 'chat').id, 'gemini/gemini-2.5-flash', 'Vertex without credentials');
  t.equal(catalogOf({ GEMINI_API_KEY: 'k', ...vertexEnv }).resolve('gemini-2.5-flash', 'chat').id, 'gemini/gemini-2.5-flash', "both: the vendor's own");
  t.equal(catalogOf(vertexEnv).resolve('gemini-2.5-flash', 'chat').id, 'vertex/gemini-2.5-flash', 'only Vertex has credentials');
  t.equal(catalogOf({}).resolve('gemini-2.5-flash', 'chat').id, 'gemini/gemini-2.5-flash', "neither: the vendor's own (its call names the missing key)");
});
