// The textured model: downloaded with progress, parsed by GLTFLoader, and placed in the point cloud's frame by
// its CESIUM_RTC centre minus the scene's origin.
import * as THREE from 'three';
import { GLTFLoader } from 'three/addons/loaders/GLTFLoader.js';
import type { Vec3 } from './geometry.ts';
import { type GlbInfo, readGlbInfo } from './glb.ts';

export interface LoadedModel {
  object: THREE.Object3D;
  info: GlbInfo;
  bytes: number;
}

export async function downloadWithProgress(url: string, onProgress: (fraction: number | null) => void, signal?: AbortSignal): Promise<ArrayBuffer> {
  const response = await fetch(url, { signal });
  if (!response.ok) throw new Error(response.status === 404 ? 'The textured model was not found' : `The server answered ${response.status} for the textured model`);
  const total = Number(response.headers.get('content-length')) || 0;
  if (!response.body) return response.arrayBuffer();
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let received = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    received += value.byteLength;
    onProgress(total ? received / total : null);
  }
  const out = new Uint8Array(received);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out.buffer;
}

/** `origin` null: the model's own centre becomes the origin (no point cloud to align with). */
export async function parseModel(buffer: ArrayBuffer, origin: Vec3 | null): Promise<LoadedModel & { origin: Vec3 }> {
  const info = readGlbInfo(buffer);
  const loader = new GLTFLoader();
  if (info.extensions.includes('KHR_draco_mesh_compression')) {
    const { createDracoLoader } = await import('./draco.ts');
    loader.setDRACOLoader(createDracoLoader());
  }
  const gltf = await loader.parseAsync(buffer, '');
  const centre = info.rtcCentre ?? [0, 0, 0];
  const sceneOrigin = origin ?? centre;
  const object = gltf.scene;
  object.position.set(centre[0] - sceneOrigin[0], centre[1] - sceneOrigin[1], centre[2] - sceneOrigin[2]);
  object.updateMatrixWorld(true);
  return { object, info, bytes: buffer.byteLength, origin: sceneOrigin };
}
