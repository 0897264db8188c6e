/** Everything a view needs, loaded together and only to render human output (Ink and React are ~50 MB and ~0.4 s). */
export { render, renderToString } from 'ink';
export * from './components.js';
export * from './usage.js';
export * from './routes.js';
