// The drawn measurement: two markers and the segment between them, drawn over everything so that the line stays
// visible where it passes behind points.
import * as THREE from 'three';

export class MeasureGraphic {
  readonly group = new THREE.Group();
  private readonly markers: THREE.Points;
  private readonly line: THREE.Line;

  constructor() {
    this.group.renderOrder = 10;
    const markerGeometry = new THREE.BufferGeometry();
    markerGeometry.setAttribute('position', new THREE.BufferAttribute(new Float32Array(6), 3));
    this.markers = new THREE.Points(markerGeometry, new THREE.PointsMaterial({ color: 0xffd400, size: 10, sizeAttenuation: false, depthTest: false, transparent: true }));
    const lineGeometry = new THREE.BufferGeometry();
    lineGeometry.setAttribute('position', new THREE.BufferAttribute(new Float32Array(6), 3));
    this.line = new THREE.Line(lineGeometry, new THREE.LineBasicMaterial({ color: 0xffd400, depthTest: false, transparent: true }));
    for (const object of [this.markers, this.line]) {
      object.frustumCulled = false;
      object.renderOrder = 10;
      this.group.add(object);
    }
    this.set([]);
  }

  /** Zero, one or two points in the scene's frame. */
  set(points: THREE.Vector3[]): void {
    const write = (object: THREE.Points | THREE.Line, count: number) => {
      const attribute = object.geometry.getAttribute('position') as THREE.BufferAttribute;
      points.slice(0, 2).forEach((p, i) => attribute.setXYZ(i, p.x, p.y, p.z));
      attribute.needsUpdate = true;
      object.geometry.setDrawRange(0, count);
    };
    write(this.markers, Math.min(points.length, 2));
    write(this.line, points.length >= 2 ? 2 : 0);
    this.group.visible = points.length > 0;
  }

  dispose(): void {
    for (const object of [this.markers, this.line]) {
      object.geometry.dispose();
      (object.material as THREE.Material).dispose();
    }
  }
}
