// The points' material: fixed-size round points in CSS pixels, coloured by the file's RGB, by an elevation ramp,
// by the points' ASPRS class or by their intensity in grey, chosen on the GPU, so that switching modes re-uploads
// nothing.
import * as THREE from 'three';
import type { Box3 } from './geometry.ts';

export type ColourMode = 'rgb' | 'elevation' | 'class' | 'intensity';

const MODES: Record<ColourMode, number> = { rgb: 0, elevation: 1, class: 2, intensity: 3 };

/** The ASPRS classes the engine writes (and LAS's other common ones), with their colours in the class mode. */
export const CLASS_COLOURS: { code: number; name: string; colour: string }[] = [
  { code: 1, name: 'Unclassified', colour: '#9e9e9e' },
  { code: 2, name: 'Ground', colour: '#a67c52' },
  { code: 3, name: 'Low vegetation', colour: '#9ad86f' },
  { code: 4, name: 'Medium vegetation', colour: '#4caf3f' },
  { code: 5, name: 'High vegetation', colour: '#1b6e2a' },
  { code: 6, name: 'Building', colour: '#d9483b' },
  { code: 7, name: 'Noise', colour: '#c040c0' },
  { code: 9, name: 'Water', colour: '#2f6fd6' },
];
const PALETTE_SIZE = 32; // codes 0-31, all that formats 0 to 5 can hold

// The shader writes its colours as they are (RGB comes from the file the same way): the legend's CSS colours are
// taken as they are too, not converted to three.js's linear working space.
const shaderColour = (css: string): THREE.Color => new THREE.Color().setStyle(css, THREE.LinearSRGBColorSpace);

function palette(): THREE.Color[] {
  const colours = Array.from({ length: PALETTE_SIZE }, () => shaderColour('#9e9e9e'));
  for (const { code, colour } of CLASS_COLOURS) colours[code] = shaderColour(colour);
  return colours;
}

const vertexShader = /* glsl */ `
attribute vec3 rgb;
attribute float classification;
attribute float intensity;
uniform float uIntensityPeak;
uniform vec3 uClassColours[${PALETTE_SIZE}];
uniform float uSize;
uniform float uPixelRatio;
uniform float uMode;
uniform float uZMin;
uniform float uZMax;
uniform float uClip;
uniform vec3 uClipMin;
uniform vec3 uClipMax;
varying vec3 vColour;

// Dark blue, teal, green, yellow, white: distinct steps for low relief, readable on both themes.
vec3 ramp(float t) {
  vec3 c0 = vec3(0.10, 0.16, 0.45);
  vec3 c1 = vec3(0.10, 0.55, 0.62);
  vec3 c2 = vec3(0.35, 0.75, 0.30);
  vec3 c3 = vec3(0.96, 0.85, 0.25);
  vec3 c4 = vec3(0.98, 0.97, 0.94);
  float s = t * 4.0;
  if (s < 1.0) return mix(c0, c1, s);
  if (s < 2.0) return mix(c1, c2, s - 1.0);
  if (s < 3.0) return mix(c2, c3, s - 2.0);
  return mix(c3, c4, s - 3.0);
}

void main() {
  vec4 world = modelMatrix * vec4(position, 1.0);
  if (uClip > 0.5 && (any(lessThan(world.xyz, uClipMin)) || any(greaterThan(world.xyz, uClipMax)))) {
    gl_Position = vec4(2.0, 2.0, 2.0, 1.0); // outside the view volume: not drawn
    gl_PointSize = 0.0;
    return;
  }
  if (uMode > 2.5) vColour = vec3(clamp(intensity / max(uIntensityPeak, 1.0), 0.0, 1.0));
  else if (uMode > 1.5) vColour = uClassColours[int(min(classification, ${PALETTE_SIZE - 1}.0))];
  else if (uMode > 0.5) vColour = ramp(clamp((world.z - uZMin) / max(uZMax - uZMin, 1e-6), 0.0, 1.0));
  else vColour = rgb;
  gl_Position = projectionMatrix * viewMatrix * world;
  gl_PointSize = uSize * uPixelRatio;
}
`;

const fragmentShader = /* glsl */ `
varying vec3 vColour;
void main() {
  vec2 c = gl_PointCoord - 0.5;
  if (dot(c, c) > 0.25) discard;
  gl_FragColor = vec4(vColour, 1.0);
}
`;

export function createPointMaterial(zMin: number, zMax: number): THREE.ShaderMaterial {
  return new THREE.ShaderMaterial({
    vertexShader,
    fragmentShader,
    uniforms: {
      uSize: { value: 2 },
      uPixelRatio: { value: 1 },
      uMode: { value: 0 },
      uZMin: { value: zMin },
      uZMax: { value: zMax },
      uClassColours: { value: palette() },
      uIntensityPeak: { value: 1 },
      uClip: { value: 0 },
      uClipMin: { value: new THREE.Vector3() },
      uClipMax: { value: new THREE.Vector3() },
    },
  });
}

export function setColourMode(material: THREE.ShaderMaterial, mode: ColourMode): void {
  material.uniforms.uMode.value = MODES[mode];
}

/** The intensity shown white; those above it too. */
export function setIntensityPeak(material: THREE.ShaderMaterial, peak: number): void {
  material.uniforms.uIntensityPeak.value = peak;
}

/** A GLSL float stands for an unbounded side. */
const FAR = 1e30;
const bounded = (v: number) => Math.max(-FAR, Math.min(FAR, v));

/** Draws only the points inside `box` (scene frame); null draws them all. */
export function setClipBox(material: THREE.ShaderMaterial, box: Box3 | null): void {
  material.uniforms.uClip.value = box ? 1 : 0;
  if (box) {
    material.uniforms.uClipMin.value.set(...box.min.map(bounded));
    material.uniforms.uClipMax.value.set(...box.max.map(bounded));
  }
}
