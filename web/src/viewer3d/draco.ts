// Draco decoding, loaded only for a GLB that needs it. three's DRACOLoader finds its decoder files by
// import.meta.url, which the bundler turns into emitted assets: no decoder path to configure.
import { DRACOLoader } from 'three/addons/loaders/DRACOLoader.js';

export const createDracoLoader = (): DRACOLoader => new DRACOLoader();
