// The console's build: static assets only (index.html, one script, one stylesheet), nothing
// fetched from elsewhere at run time. Run through scripts/build-ui.mjs, which sets root and outDir.
import {defineConfig} from 'vite';

export default defineConfig({
  // Relative asset URLs: the page works wherever the server mounts it.
  base: './',
  // Vite's own TSX transform with React's automatic runtime (no React plugin needed).
  oxc: {jsx: {runtime: 'automatic', importSource: 'react'}},
  build: {
    target: 'es2022',
    assetsDir: 'assets',
    // Everything in files: no inline data: scripts or styles (the CSP allows neither).
    assetsInlineLimit: 0,
    modulePreload: {polyfill: false},
    sourcemap: false,
    reportCompressedSize: false,
  },
});
