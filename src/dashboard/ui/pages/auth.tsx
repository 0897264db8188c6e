import { useState, type FormEvent } from 'react';
import { ApiError } from '../../lib/api.js';
import { loginNoticeOf } from '../../lib/session.js';
import { checkEmail, checkName, checkNewPassword, PASSWORD_MIN } from '../../lib/validate.js';
import { ErrorNotice, Field, Link } from '../components.js';
import { useApp, usePlace, useTitle } from '../context.js';

/** Log in and sign up: the rules shown inline, the server's answer shown as it is. */

function keepNext(search: URLSearchParams): string {
  const next = search.get('next');
  return next ? `?next=${encodeURIComponent(next)}` : '';
}

function PasswordToggle({ shown, onToggle }: { shown: boolean; onToggle: () => void }) {
  return (
    <label className="checkbox">
      <input type="checkbox" checked={shown} onChange={onToggle} /> Show password
    </label>
  );
}

export function LoginPage() {
  const { api, signedIn } = useApp();
  const place = usePlace();
  useTitle('Log in');
  const notice = loginNoticeOf(place.search.get('session'));
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [showPassword, setShowPassword] = useState(false);
  const [submitted, setSubmitted] = useState(false);
  const [touched, setTouched] = useState({ email: false, password: false });
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);

  const emailCheck = checkEmail(email);
  const passwordError = password ? null : 'Enter your password.';
  const emailError = (touched.email || submitted) && !emailCheck.ok ? emailCheck.message : null;

  const submit = async (event: FormEvent): Promise<void> => {
    event.preventDefault();
    setSubmitted(true);
    if (!emailCheck.ok || passwordError) return;
    setBusy(true);
    setError(null);
    try {
      await api.login({ email: emailCheck.value, password });
      const me = await api.me();
      signedIn(me.user);
    } catch (reason) {
      setError(reason instanceof ApiError ? reason : new ApiError(0, String(reason)));
      setBusy(false);
    }
  };

  return (
    <div className="auth-card">
      <h1 id="page-title" tabIndex={-1}>
        Log in
      </h1>
      {notice ? (
        <div className={place.search.get('session') === 'expired' ? 'notice notice-warning' : 'notice notice-info'} role="status">
          {notice}
        </div>
      ) : null}
      <form onSubmit={(event) => void submit(event)} noValidate>
        <Field
          label="E-mail"
          type="email"
          name="email"
          autoComplete="username"
          inputMode="email"
          value={email}
          onChange={(event) => setEmail(event.target.value)}
          onBlur={() => setTouched((t) => ({ ...t, email: true }))}
          error={emailError}
          required
          autoFocus
        />
        <Field
          label="Password"
          type={showPassword ? 'text' : 'password'}
          name="password"
          autoComplete="current-password"
          value={password}
          onChange={(event) => setPassword(event.target.value)}
          onBlur={() => setTouched((t) => ({ ...t, password: true }))}
          error={(touched.password || submitted) && passwordError ? passwordError : null}
          required
        />
        <PasswordToggle shown={showPassword} onToggle={() => setShowPassword((s) => !s)} />
        <ErrorNotice error={error} />
        <button type="submit" className="button wide" disabled={busy}>
          {busy ? 'Logging in…' : 'Log in'}
        </button>
      </form>
      <p className="auth-switch">
        No account yet? <Link to={`/signup${keepNext(place.search)}`}>Sign up</Link>
      </p>
    </div>
  );
}

export function SignupPage() {
  const { api, signedIn } = useApp();
  const place = usePlace();
  useTitle('Sign up');
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [showPassword, setShowPassword] = useState(false);
  const [submitted, setSubmitted] = useState(false);
  const [touched, setTouched] = useState({ name: false, email: false, password: false });
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);

  const nameCheck = checkName(name, 'your name', 200);
  const emailCheck = checkEmail(email);
  const passwordCheck = checkNewPassword(password);
  const show = (field: keyof typeof touched): boolean => touched[field] || submitted;
  const serverField = (field: string): string | null => (error && error.param === field ? error.message : null);

  const submit = async (event: FormEvent): Promise<void> => {
    event.preventDefault();
    setSubmitted(true);
    if (!nameCheck.ok || !emailCheck.ok || !passwordCheck.ok) return;
    setBusy(true);
    setError(null);
    try {
      const result = await api.signup({ name: nameCheck.value, email: emailCheck.value, password: passwordCheck.value });
      signedIn(result.user);
    } catch (reason) {
      setError(reason instanceof ApiError ? reason : new ApiError(0, String(reason)));
      setBusy(false);
    }
  };

  return (
    <div className="auth-card">
      <h1 id="page-title" tabIndex={-1}>
        Create your account
      </h1>
      <form onSubmit={(event) => void submit(event)} noValidate>
        <Field
          label="Name"
          name="name"
          autoComplete="name"
          value={name}
          onChange={(event) => setName(event.target.value)}
          onBlur={() => setTouched((t) => ({ ...t, name: true }))}
          error={show('name') && !nameCheck.ok ? nameCheck.message : serverField('name')}
          required
          autoFocus
        />
        <Field
          label="E-mail"
          type="email"
          name="email"
          autoComplete="username"
          inputMode="email"
          value={email}
          onChange={(event) => setEmail(event.target.value)}
          onBlur={() => setTouched((t) => ({ ...t, email: true }))}
          hint="An address like name@example.com."
          error={show('email') && !emailCheck.ok ? emailCheck.message : serverField('email')}
          required
        />
        <Field
          label="Password"
          type={showPassword ? 'text' : 'password'}
          name="password"
          autoComplete="new-password"
          value={password}
          onChange={(event) => setPassword(event.target.value)}
          onBlur={() => setTouched((t) => ({ ...t, password: true }))}
          hint={
            <span className={passwordCheck.ok ? 'rule rule-met' : 'rule'}>
              {passwordCheck.ok ? '✓ ' : ''}At least {PASSWORD_MIN} characters.
            </span>
          }
          error={show('password') && !passwordCheck.ok ? passwordCheck.message : serverField('password')}
          minLength={PASSWORD_MIN}
          required
        />
        <PasswordToggle shown={showPassword} onToggle={() => setShowPassword((s) => !s)} />
        <ErrorNotice error={error && !['name', 'email', 'password'].includes(error.param ?? '') ? error : null} />
        <button type="submit" className="button wide" disabled={busy}>
          {busy ? 'Creating your account…' : 'Sign up'}
        </button>
      </form>
      <p className="auth-switch">
        Have an account? <Link to={`/login${keepNext(place.search)}`}>Log in</Link>
      </p>
    </div>
  );
}
