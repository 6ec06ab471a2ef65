// Drawing of measurement shapes: a click adds a vertex, a double-click or finish() ends, Escape cancels, and
// Enter adds a vertex at the map's centre so that keyboard users (who pan with the arrow keys) can draw too.
import type { GeoJSONSource, Map as MapLibreMap, MapMouseEvent } from 'maplibre-gl';
import type { LonLat } from './geodesy.ts';

export type SketchMode = 'point' | 'line' | 'polygon';

export const MEASURE_SOURCE = 'measure';

/** The layers that show the shape being drawn or measured, above every task layer. */
export function addMeasureLayers(map: MapLibreMap): void {
  map.addSource(MEASURE_SOURCE, { type: 'geojson', data: { type: 'FeatureCollection', features: [] } });
  map.addLayer({ id: 'measure-fill', type: 'fill', source: MEASURE_SOURCE, filter: ['==', '$type', 'Polygon'], paint: { 'fill-color': '#f59e0b', 'fill-opacity': 0.2 } });
  map.addLayer({ id: 'measure-line', type: 'line', source: MEASURE_SOURCE, filter: ['in', '$type', 'LineString', 'Polygon'], paint: { 'line-color': '#f59e0b', 'line-width': 3 } });
  map.addLayer({ id: 'measure-points', type: 'circle', source: MEASURE_SOURCE, filter: ['==', '$type', 'Point'], paint: { 'circle-radius': 5, 'circle-color': '#ffffff', 'circle-stroke-color': '#b45309', 'circle-stroke-width': 2 } });
}

export function showShape(map: MapLibreMap, mode: SketchMode, points: LonLat[], closed: boolean): void {
  const features: GeoJSON.Feature[] = points.map((point) => ({ type: 'Feature', properties: {}, geometry: { type: 'Point', coordinates: point } }));
  if (mode === 'polygon' && closed && points.length >= 3) {
    features.push({ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [[...points, points[0]]] } });
  } else if (mode !== 'point' && points.length >= 2) {
    features.push({ type: 'Feature', properties: {}, geometry: { type: 'LineString', coordinates: points } });
  }
  (map.getSource(MEASURE_SOURCE) as GeoJSONSource | undefined)?.setData({ type: 'FeatureCollection', features });
}

export function clearShape(map: MapLibreMap): void {
  showShape(map, 'point', [], false);
}

export interface SketchHandlers {
  /** The vertices so far, and the cursor as a provisional last vertex (null when off the map). */
  onChange(points: LonLat[], cursor: LonLat | null): void;
  onFinish(points: LonLat[]): void;
  onCancel(): void;
}

/** Vertices closer than this on screen are one (the two clicks of a double-click). */
const SAME_VERTEX_PX = 4;

export class Sketch {
  points: LonLat[] = [];
  private cursor: LonLat | null = null;
  private active = false;

  constructor(
    private readonly map: MapLibreMap,
    readonly mode: SketchMode,
    private readonly handlers: SketchHandlers,
  ) {}

  get minPoints(): number {
    return this.mode === 'point' ? 1 : this.mode === 'line' ? 2 : 3;
  }

  start(): void {
    this.active = true;
    this.map.on('click', this.onClick);
    this.map.on('dblclick', this.onDoubleClick);
    this.map.on('mousemove', this.onMove);
    this.map.getCanvas().addEventListener('keydown', this.onMapKey);
    document.addEventListener('keydown', this.onEscape);
    this.map.doubleClickZoom.disable();
    this.map.getCanvas().style.cursor = 'crosshair';
    this.redraw();
  }

  /** Ends drawing; true when the shape had enough vertices to be measured. */
  finish(): boolean {
    if (!this.active) return false;
    this.points = dedupe(this.map, this.points);
    if (this.points.length < this.minPoints) return false;
    this.detach();
    this.cursor = null;
    showShape(this.map, this.mode, this.points, true);
    this.handlers.onFinish(this.points);
    return true;
  }

  cancel(): void {
    if (!this.active) return;
    this.detach();
    clearShape(this.map);
    this.handlers.onCancel();
  }

  /** Stops listening without telling anyone: the page is going away or another tool replaces this one. */
  detach(): void {
    this.active = false;
    this.map.off('click', this.onClick);
    this.map.off('dblclick', this.onDoubleClick);
    this.map.off('mousemove', this.onMove);
    this.map.getCanvas().removeEventListener('keydown', this.onMapKey);
    document.removeEventListener('keydown', this.onEscape);
    // Re-enabled a tick later: the dblclick that finished a shape must not zoom.
    setTimeout(() => this.map.doubleClickZoom.enable(), 0);
    this.map.getCanvas().style.cursor = '';
  }

  private add(point: LonLat): void {
    this.points = [...this.points, point];
    if (this.mode === 'point') {
      this.finish();
      return;
    }
    this.redraw();
  }

  private redraw(): void {
    const shown = this.cursor ? [...this.points, this.cursor] : this.points;
    showShape(this.map, this.mode, shown, this.mode === 'polygon' && shown.length >= 3);
    this.handlers.onChange(this.points, this.cursor);
  }

  private readonly onClick = (event: MapMouseEvent) => this.add([event.lngLat.lng, event.lngLat.lat]);

  private readonly onDoubleClick = (event: MapMouseEvent) => {
    event.preventDefault();
    this.finish();
  };

  private readonly onMove = (event: MapMouseEvent) => {
    if (this.mode === 'point' || this.points.length === 0) return;
    this.cursor = [event.lngLat.lng, event.lngLat.lat];
    this.redraw();
  };

  private readonly onMapKey = (event: KeyboardEvent) => {
    if (event.key !== 'Enter' || event.target !== this.map.getCanvas()) return;
    event.preventDefault();
    const centre = this.map.getCenter();
    this.add([centre.lng, centre.lat]);
  };

  private readonly onEscape = (event: KeyboardEvent) => {
    if (event.key === 'Escape') this.cancel();
  };
}

function dedupe(map: MapLibreMap, points: LonLat[]): LonLat[] {
  const kept: LonLat[] = [];
  for (const point of points) {
    const last = kept[kept.length - 1];
    if (last) {
      const a = map.project(last);
      const b = map.project(point);
      if (Math.hypot(a.x - b.x, a.y - b.y) < SAME_VERTEX_PX) continue;
    }
    kept.push(point);
  }
  return kept;
}
