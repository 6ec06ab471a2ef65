// The environment of the engine's processes. The engine parses users' JPEG, TIFF, LAZ and zip files with C
// libraries, so it gets only what it and those libraries read, never the service's secrets (SECRET_KEY,
// DATABASE_URL, AEROMAP_ADMIN_PASSWORD) nor anything else its parent happens to hold.
const NAMES = new Set([
  'PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LANGUAGE', 'TZ', 'TMPDIR', 'TEMP', 'TMP',
  'LD_LIBRARY_PATH', 'CUDA_VISIBLE_DEVICES', 'VIRTUAL_ENV', 'AEROMAP_PUBLIC_URLS_ONLY', 'AEROMAP_MEMORY_LIMIT',
]);
/** Locale, the engine's own settings, Python, and the thread pools and data of the numeric and GIS libraries. */
const PREFIXES = ['LC_', 'AEROMAP_ENGINE_', 'PYTHON', 'OMP_', 'GOMP_', 'KMP_', 'OPENBLAS_', 'MKL_', 'OPENCV_', 'PROJ_', 'GDAL_', 'CPL_'];

const allowed = (name: string): boolean => NAMES.has(name) || PREFIXES.some((prefix) => name.startsWith(prefix));

/** The variables of `env` that the engine may see. */
export function engineEnvironment(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => allowed(name)));
}

/** The variables of `env` that a processing node needs: its engine's, where the engine is, and Node.js's own. */
export function nodeEnvironment(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const node = Object.entries(env).filter(([name]) => name === 'AEROMAP_ENGINE' || name.startsWith('NODE_'));
  return { ...engineEnvironment(env), ...Object.fromEntries(node) };
}
