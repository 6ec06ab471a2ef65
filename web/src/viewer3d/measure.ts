// The drawn measurement: a marker at each clicked point and the path through them (closed around an area), drawn
// over everything so that the line stays visible where it passes behind points.
import * as THREE from 'three';

export class MeasureGraphic {
  readonly group = new THREE.Group();
  private readonly geometry = new THREE.BufferGeometry();
  private readonly markers: THREE.Points;
  /** The same points as an open path and as a closed outline: one of the two is shown. */
  private readonly path: THREE.Line;
  private readonly outline: THREE.LineLoop;
  private capacity = 0;

  constructor() {
    this.group.renderOrder = 10;
    const lineMaterial = new THREE.LineBasicMaterial({ color: 0xffd400, depthTest: false, transparent: true });
    this.markers = new THREE.Points(this.geometry, new THREE.PointsMaterial({ color: 0xffd400, size: 10, sizeAttenuation: false, depthTest: false, transparent: true }));
    this.path = new THREE.Line(this.geometry, lineMaterial);
    this.outline = new THREE.LineLoop(this.geometry, lineMaterial);
    for (const object of [this.markers, this.path, this.outline]) {
      object.frustumCulled = false;
      object.renderOrder = 10;
      this.group.add(object);
    }
    this.set([], false);
  }

  /** The clicked points in the scene's frame; `closed` joins the last to the first. */
  set(points: THREE.Vector3[], closed: boolean): void {
    if (points.length > this.capacity || this.capacity === 0) {
      this.capacity = Math.max(8, points.length * 2);
      this.geometry.setAttribute('position', new THREE.BufferAttribute(new Float32Array(this.capacity * 3), 3));
    }
    const attribute = this.geometry.getAttribute('position') as THREE.BufferAttribute;
    points.forEach((p, i) => attribute.setXYZ(i, p.x, p.y, p.z));
    attribute.needsUpdate = true;
    this.geometry.setDrawRange(0, points.length);
    this.path.visible = !closed && points.length >= 2;
    this.outline.visible = closed && points.length >= 2;
    this.group.visible = points.length > 0;
  }

  dispose(): void {
    this.geometry.dispose();
    (this.markers.material as THREE.Material).dispose();
    (this.path.material as THREE.Material).dispose();
  }
}
