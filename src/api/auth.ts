import type { App } from '../app.js';
import { errors, isGatewayError } from '../core/errors.js';
import { SignupLimits } from '../core/limits/signup-limits.js';
import { rejectUnknownFields, requiredEmail, requiredString, requireObject, type JsonObject } from '../core/validate.js';
import { clearSessionCookie, sessionCookie } from '../http/cookies.js';
import type { Route } from '../http/server.js';
import type { Router } from '../http/router.js';
import { refuseForeignOrigin, requireSessionPrincipal } from './guards.js';
import { presentAccount } from './presenters.js';

/** bcrypt only reads the first 72 bytes of a password; refuse longer ones rather than ignore the rest. */
export function requiredPassword(body: JsonObject): string {
  const password = body.password;
  if (password === undefined || password === null) throw errors.missingField('password');
  if (typeof password !== 'string') throw errors.invalidField('password', 'must be a string');
  if (password.length < 8) throw errors.invalidField('password', 'must be at least 8 characters');
  if (Buffer.byteLength(password) > 72) throw errors.invalidField('password', 'must be at most 72 bytes');
  return password;
}

export function registerAuthRoutes(router: Router<Route>, app: App): void {
  const cookie = (token: string): string => sessionCookie(token, app.config.auth.sessionTtlSeconds, app.config.auth.cookieSecure);
  const signup = app.config.auth.signup;
  const signupLimits = new SignupLimits(signup, app.redis && { client: app.redis, prefix: app.config.redis?.keyPrefix ?? 'gateway:' });

  router.add('POST', '/api/auth/signup', {
    handle: async (ctx) => {
      if (!app.config.auth.allowSignup) throw errors.signupDisabled();
      refuseForeignOrigin(app, ctx);
      const body = requireObject(await ctx.json());
      rejectUnknownFields(body, ['email', 'password', 'name']);
      const email = requiredEmail(body);
      const password = requiredPassword(body);
      const name = requiredString(body, 'name', { max: 200 });
      if (signup.emailDomains.length > 0 && !signup.emailDomains.includes(email.slice(email.lastIndexOf('@') + 1))) throw errors.emailDomainNotAllowed(signup.emailDomains);
      // A well-formed request takes a slot (per address, and of the gateway's rate) before the
      // password is hashed: past a limit, 429 at the cost of a lookup.
      await signupLimits.admit(ctx.clientIp, ctx.requestId);
      const account = await app.accounts.create({ email, name, password, role: 'user' });
      const { token, session } = await app.sessions.issue(account.id);
      ctx.send(200, { user: presentAccount(account, { timeZone: app.config.governance.timeZone }), token, csrf_token: app.sessions.csrfToken(session), expires_at: new Date(session.expiresAt).toISOString() }, { 'set-cookie': cookie(token) });
    },
  });

  router.add('POST', '/api/auth/login', {
    handle: async (ctx) => {
      // A foreign page must not log a browser into an account of its choosing.
      refuseForeignOrigin(app, ctx);
      const body = requireObject(await ctx.json());
      rejectUnknownFields(body, ['email', 'password']);
      const email = requiredString(body, 'email', { max: 254 });
      const password = requiredString(body, 'password', { max: 1024 });
      const account = await app.accounts.login(email, password, ctx.clientIp);
      const { token, session } = await app.sessions.issue(account.id);
      ctx.send(200, { token, expires_at: new Date(session.expiresAt).toISOString(), csrf_token: app.sessions.csrfToken(session) }, { 'set-cookie': cookie(token) });
    },
  });

  // Ends the session server-side (its token id is refused from now on) and clears the cookie.
  // Without a live session there is nothing to end: the cookie is cleared all the same.
  router.add('POST', '/api/auth/logout', {
    handle: async (ctx) => {
      const clear = { 'set-cookie': clearSessionCookie(app.config.auth.cookieSecure) };
      let principal;
      try {
        principal = await requireSessionPrincipal(app, ctx);
      } catch (error) {
        if (isGatewayError(error) && error.status === 401) {
          ctx.send(200, { ok: true }, clear);
          return;
        }
        throw error;
      }
      await app.store.sessions.revoke(principal.session.id, principal.account.id, principal.session.expiresAt);
      ctx.send(200, { ok: true }, clear);
    },
  });

  router.add('GET', '/api/auth/me', {
    handle: async (ctx) => {
      const { account, session } = await requireSessionPrincipal(app, ctx);
      ctx.send(200, { user: presentAccount(account, { timeZone: app.config.governance.timeZone }), csrf_token: app.sessions.csrfToken(session), expires_at: new Date(session.expiresAt).toISOString() });
    },
  });
}
