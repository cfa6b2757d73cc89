// The `oauth` scenario of client.mjs: the TypeScript SDK's client with its OAuth provider against
// our echo server protected with `--auth-*` (examples/echo_server.rs), tokens from
// auth_server.mjs. The SDK does everything a real client does: it reads the 401's challenge,
// fetches our Protected Resource Metadata, discovers the authorization server, registers itself,
// runs the authorization code flow with PKCE (approved at once by the test server, the redirect
// followed by hand instead of a browser), calls a tool, and refreshes its token when the server
// refuses the access token it holds.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const REDIRECT_URL = 'http://127.0.0.1/callback';

/** An OAuthClientProvider holding everything in memory; the "browser" is a fetch. */
class Provider {
  constructor() {
    this.client = undefined;
    this.saved = undefined;
    this.verifier = undefined;
    this.code = undefined;
    this.redirects = 0;
  }

  get redirectUrl() {
    return REDIRECT_URL;
  }

  get clientMetadata() {
    return {
      client_name: 'interop ts-client',
      redirect_uris: [REDIRECT_URL],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  clientInformation() {
    return this.client;
  }

  saveClientInformation(information) {
    this.client = information;
  }

  tokens() {
    return this.saved;
  }

  saveTokens(tokens) {
    this.saved = tokens;
  }

  saveCodeVerifier(verifier) {
    this.verifier = verifier;
  }

  codeVerifier() {
    return this.verifier;
  }

  /** The user approves: the test server redirects back at once with the code. */
  async redirectToAuthorization(url) {
    this.redirects += 1;
    const answer = await fetch(url, { redirect: 'manual' });
    const location = answer.headers.get('location');
    if (answer.status !== 302 || !location) {
      throw new Error(`authorization answered ${answer.status}: ${await answer.text()}`);
    }
    this.code = new URL(location).searchParams.get('code');
  }
}

/** Runs the scenario; `step` and `check` are client.mjs's. Returns what passed. */
export async function runOAuth(url, { step, check, wire }) {
  const provider = new Provider();
  const connect = () => {
    const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider, fetch: wire });
    const client = new Client({ name: 'interop-ts-client', version: '0.1.0' });
    return { client, transport };
  };
  let { client, transport } = connect();
  await step('authorize', async () => {
    try {
      await client.connect(transport);
      throw new Error('connected without a token: the server is not protected');
    } catch (error) {
      if (!(error instanceof UnauthorizedError)) {
        throw error;
      }
    }
    check(provider.redirects === 1 && provider.code, `expected one authorization with a code, got ${provider.redirects}`);
    check(provider.client?.client_id, 'the client did not register');
    await transport.finishAuth(provider.code);
    check(provider.saved?.access_token && provider.saved?.refresh_token, 'no tokens after the code exchange');
    ({ client, transport } = connect());
    await client.connect(transport);
  });
  await step('echo', async () => {
    const result = await client.callTool({ name: 'echo', arguments: { text: 'hello, oauth' } });
    check(result.content?.[0]?.text === 'hello, oauth', `echo answered ${JSON.stringify(result)}`);
  });
  const first = provider.saved;
  await step('refresh', async () => {
    // The server refuses the access token held now (as it would an expired one); the SDK
    // refreshes and sends the request again.
    provider.saved = { ...first, access_token: 'revoked' };
    const result = await client.callTool({ name: 'echo', arguments: { text: 'again' } });
    check(result.content?.[0]?.text === 'again', `echo after refresh answered ${JSON.stringify(result)}`);
    check(provider.saved.access_token !== 'revoked', 'the access token was not replaced');
    check(provider.saved.refresh_token !== first.refresh_token, 'the refresh token was not rotated');
    check(provider.redirects === 1, 'the refresh sent the user to authorize again');
  });
  await step('close', async () => {
    await transport.terminateSession();
    await client.close();
  });
  return 'registered, authorized with PKCE, called echo, refreshed a refused token and called it again';
}
