// A real OpenID Connect provider (npm oidc-provider) for the SSO tests, on Node 22.
//
//   node idp.mjs <port> <client_id> <client_secret> <redirect_uri>[,<redirect_uri>…] [<clients>]
//
// <clients>: a JSON list of more clients (oidc-provider client metadata), e.g. an OAuth app an
// administrator registered for the hub's upstream connections. IDP_ACCESS_TOKEN_TTL (seconds,
// default 3600) sets how long access tokens live. Tokens are revoked at /token/revocation.
//
// Prints "ready <issuer>" once listening. People sign in at /interaction/<uid> by typing an
// account id (no password). The tests steer it through /test/* (JSON):
//   POST /test/accounts   {"<id>": {"email", "email_verified", "preferred_username", "groups",
//                          "disabled"}}  replaces the accounts; a disabled one is refused.
//   POST /test/tamper     {"mode": null | "signature" | "nonce" | "azp-missing" | "azp-other" |
//                          "azp-ok"}: the next ID tokens carry a broken signature, or a nonce other
//                          than the one the hub sent, or (validly signed) two audiences with no
//                          `azp`, another client's `azp`, or the hub's.
//   GET  /test/logout-token?sub=<id>&sid=<sid>  a back-channel logout token for <id> and/or the
//                          provider session <sid>, signed by the provider.
// The hub's client takes sign-outs back to <its origin>/login/ (RP-initiated logout), and its ID
// tokens carry `sid` (its back-channel logout URI is the first callback's).
import { generateKeyPairSync, randomUUID } from "node:crypto";
import Provider from "oidc-provider";
import * as jose from "jose";

const [port, clientId, clientSecret, redirectUris, moreClients] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: "jwk" }), kid: "hub-test", alg: "RS256", use: "sig" };

let accounts = {};
let tamper = null;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: clientId,
      client_secret: clientSecret,
      redirect_uris: redirectUris.split(","),
      response_types: ["code"],
      grant_types: ["authorization_code", "refresh_token"],
      post_logout_redirect_uris: [
        ...new Set(redirectUris.split(",").map((uri) => `${new URL(uri).origin}/login/`)),
      ],
      backchannel_logout_uri: redirectUris.split(",")[0].replace(/login\/callback\/$/, "backchannel-logout/"),
      backchannel_logout_session_required: true,
    },
    ...JSON.parse(moreClients || "[]"),
  ],
  ttl: { AccessToken: Number(process.env.IDP_ACCESS_TOKEN_TTL || 3600) },
  jwks: { keys: [jwk] },
  cookies: { keys: ["hub-test-cookie-key"] },
  claims: {
    openid: ["sub"],
    email: ["email", "email_verified"],
    profile: ["preferred_username", "name"],
    groups: ["groups"],
  },
  conformIdTokenClaims: false,
  features: {
    devInteractions: { enabled: false },
    revocation: { enabled: true },
    backchannelLogout: { enabled: true },
  },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  pkce: { required: () => true },
  // Refresh tokens for every sign-in: the hub checks its SSO sessions with them. A refresh for a
  // disabled account is refused (invalid_grant), as findAccount finds no one.
  issueRefreshToken: async () => true,
  async findAccount(ctx, id) {
    const account = accounts[id];
    if (!account || account.disabled) return undefined;
    return { accountId: id, async claims() { return { sub: id, ...account, disabled: undefined } } };
  },
});
provider.proxy = true;

async function readBody(req) {
  let body = "";
  for await (const chunk of req) body += chunk;
  return body;
}

function page(title, inner) {
  return `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1>${inner}</body></html>`;
}

provider.use(async (ctx, next) => {
  if (ctx.path === "/test/accounts" && ctx.method === "POST") {
    accounts = JSON.parse(await readBody(ctx.req));
    ctx.body = { ok: true };
    return;
  }
  if (ctx.path === "/test/tamper" && ctx.method === "POST") {
    tamper = JSON.parse(await readBody(ctx.req)).mode;
    ctx.body = { ok: true };
    return;
  }
  if (ctx.path === "/test/logout-token") {
    const key = await jose.importJWK(jwk, "RS256");
    const claims = {
      events: { "http://schemas.openid.net/event/backchannel-logout": {} },
      jti: randomUUID(),
    };
    if (ctx.query.sid) claims.sid = ctx.query.sid;
    if (ctx.query.sub) claims.sub = ctx.query.sub;
    ctx.body = await new jose.SignJWT(claims)
      .setProtectedHeader({ alg: "RS256", kid: jwk.kid, typ: "logout+jwt" })
      .setIssuer(issuer)
      .setAudience(clientId)
      .setIssuedAt()
      .setExpirationTime("2m")
      .sign(key);
    return;
  }
  const match = ctx.path.match(/^\/interaction\/([^/]+)$/);
  if (match) {
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    if (details.prompt.name === "consent") {
      const grant = new provider.Grant({
        accountId: details.session.accountId,
        clientId: details.params.client_id,
      });
      grant.addOIDCScope(details.params.scope);
      const grantId = await grant.save();
      await provider.interactionFinished(ctx.req, ctx.res, { consent: { grantId } });
      return;
    }
    if (ctx.method === "GET") {
      ctx.type = "html";
      ctx.body = page(
        "Test identity provider",
        `<form method="post"><label for="login">Account</label><input id="login" name="login" autofocus>` +
          `<button type="submit">Continue</button></form>`,
      );
      return;
    }
    const login = new URLSearchParams(await readBody(ctx.req)).get("login") || "";
    const account = accounts[login];
    const result =
      account && !account.disabled
        ? { login: { accountId: login } }
        : { error: "access_denied", error_description: account ? "account disabled" : "no such account" };
    await provider.interactionFinished(ctx.req, ctx.res, result);
    return;
  }
  if (ctx.path === "/auth" && tamper === "nonce") {
    const query = new URLSearchParams(ctx.querystring);
    if (query.has("nonce")) query.set("nonce", "not-the-hubs-nonce");
    ctx.querystring = query.toString();
  }
  await next();
  if (ctx.path === "/token" && tamper === "signature" && ctx.body && ctx.body.id_token) {
    const [head, payload, signature] = ctx.body.id_token.split(".");
    const claims = JSON.parse(Buffer.from(payload, "base64url"));
    claims.groups = ["hub-admins"]; // what an attacker would add
    const forged = Buffer.from(JSON.stringify(claims)).toString("base64url");
    ctx.body = { ...ctx.body, id_token: `${head}.${forged}.${signature}` };
  }
  if (ctx.path === "/token" && tamper?.startsWith("azp-") && ctx.body && ctx.body.id_token) {
    const claims = jose.decodeJwt(ctx.body.id_token);
    claims.aud = [clientId, "another-client"];
    delete claims.azp;
    if (tamper === "azp-other") claims.azp = "another-client";
    if (tamper === "azp-ok") claims.azp = clientId;
    const key = await jose.importJWK(jwk, "RS256");
    const idToken = await new jose.SignJWT(claims)
      .setProtectedHeader({ alg: "RS256", kid: jwk.kid })
      .sign(key);
    ctx.body = { ...ctx.body, id_token: idToken };
  }
});

provider.listen(Number(port), "127.0.0.1", () => {
  console.log(`ready ${issuer}`);
});
