import { createRoot } from 'react-dom/client';
import { ApiClient } from './lib/api.js';
import { Router } from './lib/router.js';
import { App } from './ui/app.js';

/** The dashboard's entry: one API client, one router on the browser's history, the app. */

const api = new ApiClient((input, init) => fetch(input, init));
const router = new Router(window.history, window.location);
window.addEventListener('popstate', () => router.popped());

const root = document.getElementById('root');
if (!root) throw new Error('index.html has no #root');
createRoot(root).render(<App api={api} router={router} />);
