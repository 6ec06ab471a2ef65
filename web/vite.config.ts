// The web application: built into dist/web, which `aeromap serve` serves at /. `npx vite --config web/vite.config.ts`
// serves it with reloading while the API answers from AEROMAP_API (default http://127.0.0.1:8000).
import { readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { type Plugin, defineConfig } from 'vite';

const root = path.dirname(new URL(import.meta.url).pathname);
const api = process.env.AEROMAP_API ?? 'http://127.0.0.1:8000';

/**
 * Brotli and gzip copies beside each text and WebAssembly file of the build, which the service sends to browsers
 * that accept them (the map's code is a fifth of its size compressed).
 */
function precompress(): Plugin {
  let outDir = '';
  return {
    name: 'aeromap-precompress',
    apply: 'build',
    configResolved: (config) => {
      outDir = path.resolve(config.root, config.build.outDir);
    },
    async closeBundle() {
      for (const entry of await readdir(outDir, { recursive: true, withFileTypes: true })) {
        if (!entry.isFile() || !/\.(js|mjs|css|html|wasm|json|svg)$/.test(entry.name)) continue;
        const file = path.join(entry.parentPath, entry.name);
        const bytes = await readFile(file);
        if (bytes.length < 1024) continue;
        await writeFile(`${file}.br`, brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 9 } }));
        await writeFile(`${file}.gz`, gzipSync(bytes, { level: 9 }));
      }
    },
  };
}

export default defineConfig({
  plugins: [precompress()],
  root,
  base: '/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: path.join(root, '..', 'dist', 'web'),
    emptyOutDir: true,
    target: 'es2022',
    chunkSizeWarningLimit: 2000,
  },
  server: { proxy: { '/api': api } },
});
