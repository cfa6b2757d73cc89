// A minimal OAuth 2.1 authorization server for the `oauth` interop pair, with no dependencies:
// the metadata (RFC 8414), dynamic client registration (RFC 7591), the authorization code grant
// with PKCE (S256 only) approved at once without a login page, the token endpoint for codes and
// refresh tokens (rotated), and the key set its JWT access tokens are verified with.
//
//   node auth_server.mjs
//
// It listens on a free port of 127.0.0.1 and prints `listening on http://127.0.0.1:PORT` first;
// its issuer is that URL and its keys are at ISSUER/jwks. Access tokens are RS256 JWTs signed
// with the auth crate's test key `rsa1`, for the audience the client named in `resource`
// (RFC 8707), valid 5 minutes. For the log, it prints one line per grant it makes.
// It is for this test only: it keeps everything in memory and approves every request.

import { createHash, randomBytes, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

const FIXTURES = new URL('../../crates/mcp-streamable-auth/tests/fixtures/', import.meta.url);
const PRIVATE_KEY = readFileSync(new URL('rsa1.pem', FIXTURES), 'utf8');
const PUBLIC_KEYS = JSON.parse(readFileSync(new URL('public.json', FIXTURES), 'utf8'));
const ACCESS_TOKEN_SECONDS = 300;

const clients = new Map(); // client_id -> registered metadata
const codes = new Map(); // code -> what the authorization request said
const refreshTokens = new Map(); // refresh token -> { clientId, resource, scope }
let issuer = '';

const base64url = (bytes) => Buffer.from(bytes).toString('base64url');
const random = () => base64url(randomBytes(24));

function accessToken(clientId, resource, scope) {
  const now = Math.floor(Date.now() / 1000);
  const header = { alg: 'RS256', typ: 'at+jwt', kid: 'rsa1' };
  const claims = {
    iss: issuer, sub: 'interop-user', aud: resource, client_id: clientId, scope,
    iat: now, exp: now + ACCESS_TOKEN_SECONDS, jti: random(),
  };
  const input = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(claims))}`;
  return `${input}.${base64url(sign('sha256', Buffer.from(input), PRIVATE_KEY))}`;
}

/** Tokens for a client, with a new refresh token (the old one, if any, is spent). */
function grant(clientId, resource, scope) {
  const refresh = random();
  refreshTokens.set(refresh, { clientId, resource, scope });
  return {
    access_token: accessToken(clientId, resource, scope), token_type: 'Bearer',
    expires_in: ACCESS_TOKEN_SECONDS, refresh_token: refresh, scope,
  };
}

function reply(response, status, body, headers = {}) {
  response.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers });
  response.end(body === undefined ? '' : JSON.stringify(body));
}

const oauthError = (response, error, description) =>
  reply(response, 400, { error, error_description: description });

async function readBody(request) {
  const chunks = [];
  for await (const chunk of request) {
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function authorize(url, response) {
  const q = url.searchParams;
  const client = clients.get(q.get('client_id'));
  if (!client || !client.redirect_uris.includes(q.get('redirect_uri'))) {
    return oauthError(response, 'invalid_request', 'unknown client or redirect_uri');
  }
  if (q.get('response_type') !== 'code' || q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge')) {
    return oauthError(response, 'invalid_request', 'response_type=code with an S256 code_challenge is required');
  }
  if (!q.get('resource')) {
    return oauthError(response, 'invalid_target', 'the resource parameter (RFC 8707) is required');
  }
  const code = random();
  codes.set(code, {
    clientId: q.get('client_id'), redirectUri: q.get('redirect_uri'), challenge: q.get('code_challenge'),
    resource: q.get('resource'), scope: q.get('scope') ?? '',
  });
  const back = new URL(q.get('redirect_uri'));
  back.searchParams.set('code', code);
  if (q.get('state') !== null) {
    back.searchParams.set('state', q.get('state'));
  }
  console.log(`authorized ${q.get('client_id')} for ${q.get('resource')} scope "${q.get('scope') ?? ''}"`);
  response.writeHead(302, { location: back.toString() });
  response.end();
}

function token(form, response) {
  const clientId = form.get('client_id');
  if (!clients.has(clientId)) {
    return reply(response, 401, { error: 'invalid_client' });
  }
  if (form.get('grant_type') === 'authorization_code') {
    const asked = codes.get(form.get('code'));
    codes.delete(form.get('code'));
    const verifier = form.get('code_verifier') ?? '';
    const challenge = base64url(createHash('sha256').update(verifier).digest());
    if (!asked || asked.clientId !== clientId || asked.redirectUri !== form.get('redirect_uri') || asked.challenge !== challenge) {
      return oauthError(response, 'invalid_grant', 'bad code, redirect_uri or code_verifier');
    }
    if (form.get('resource') && form.get('resource') !== asked.resource) {
      return oauthError(response, 'invalid_target', 'not the resource authorized');
    }
    console.log(`token for ${clientId} by code`);
    return reply(response, 200, grant(clientId, asked.resource, asked.scope));
  }
  if (form.get('grant_type') === 'refresh_token') {
    const held = refreshTokens.get(form.get('refresh_token'));
    refreshTokens.delete(form.get('refresh_token'));
    if (!held || held.clientId !== clientId) {
      return oauthError(response, 'invalid_grant', 'unknown refresh token');
    }
    console.log(`token for ${clientId} by refresh`);
    return reply(response, 200, grant(clientId, held.resource, held.scope));
  }
  return oauthError(response, 'unsupported_grant_type', 'authorization_code or refresh_token');
}

const server = createServer(async (request, response) => {
  try {
    const url = new URL(request.url, issuer);
    const route = `${request.method} ${url.pathname}`;
    if (route === 'GET /.well-known/oauth-authorization-server') {
      return reply(response, 200, {
        issuer, authorization_endpoint: `${issuer}/authorize`, token_endpoint: `${issuer}/token`,
        registration_endpoint: `${issuer}/register`, jwks_uri: `${issuer}/jwks`,
        response_types_supported: ['code'], grant_types_supported: ['authorization_code', 'refresh_token'],
        code_challenge_methods_supported: ['S256'], token_endpoint_auth_methods_supported: ['none'],
      });
    }
    if (route === 'GET /jwks') {
      return reply(response, 200, { keys: [{ ...PUBLIC_KEYS.rsa1, kid: 'rsa1', use: 'sig', alg: 'RS256' }] });
    }
    if (route === 'POST /register') {
      const metadata = JSON.parse(await readBody(request));
      if (!Array.isArray(metadata.redirect_uris) || metadata.redirect_uris.length === 0) {
        return reply(response, 400, { error: 'invalid_redirect_uri' });
      }
      const clientId = random();
      const registered = { ...metadata, client_id: clientId, client_id_issued_at: Math.floor(Date.now() / 1000), token_endpoint_auth_method: 'none' };
      clients.set(clientId, registered);
      console.log(`registered ${clientId} (${metadata.client_name ?? 'unnamed'})`);
      return reply(response, 201, registered);
    }
    if (route === 'GET /authorize') {
      return authorize(url, response);
    }
    if (route === 'POST /token') {
      return token(new URLSearchParams(await readBody(request)), response);
    }
    reply(response, 404, { error: 'not_found' });
  } catch (error) {
    console.error(error);
    reply(response, 500, { error: 'server_error' });
  }
});

server.listen(0, '127.0.0.1', () => {
  issuer = `http://127.0.0.1:${server.address().port}`;
  console.log(`listening on ${issuer}`);
});
