// The points' material: fixed-size round points in CSS pixels, coloured by the file's RGB or by an elevation ramp
// computed on the GPU, so that switching modes re-uploads nothing.
import * as THREE from 'three';

export type ColourMode = 'rgb' | 'elevation';

const vertexShader = /* glsl */ `
attribute vec3 rgb;
uniform float uSize;
uniform float uPixelRatio;
uniform float uMode;
uniform float uZMin;
uniform float uZMax;
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
  vColour = uMode > 0.5 ? ramp(clamp((world.z - uZMin) / max(uZMax - uZMin, 1e-6), 0.0, 1.0)) : rgb;
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
    },
  });
}

export function setColourMode(material: THREE.ShaderMaterial, mode: ColourMode): void {
  material.uniforms.uMode.value = mode === 'elevation' ? 1 : 0;
}
