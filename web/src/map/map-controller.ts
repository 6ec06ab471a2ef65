// Everything that talks to MapLibre: the base, the task layers, the cameras, the control points and the idle
// signal that tests wait for. The page keeps the state people change and calls in here.
import { LngLatBounds, Map as MapLibreMap, NavigationControl, Popup, ScaleControl, setWorkerUrl } from 'maplibre-gl';
import type { ExpressionSpecification, MapGeoJSONFeature, MapLayerMouseEvent, RasterTileSource } from 'maplibre-gl';
import workerUrl from 'maplibre-gl/dist/maplibre-gl-worker.mjs?url';
import type { ChangeImage } from './change.ts';
import { type ControlPointCollection, describePoint, exaggeration, markedIn, residualArrows } from './control-points.ts';
import { addMeasureLayers } from './draw.ts';
import { type LayerKind, type LayerSettings, type TileJson, sourceId, tileUrl } from './layers.ts';

// MapLibre finds its worker next to its own module, which a bundle does not keep; point it at the copy Vite emits.
setWorkerUrl(workerUrl);

declare global {
  interface Window {
    __aeromapMap?: MapLibreMap;
  }
}

const OSM = 'osm';
const CHANGE = 'change';
/** Layers of tasks are inserted below this one, so that measurements always stay on top. */
const FIRST_MEASURE_LAYER = 'measure-fill';

export class MapController {
  readonly map: MapLibreMap;
  private readonly sources = new Set<string>();
  private layersRequested = false;
  private cameraClicksEnabled = true;
  /** One popup at a time: cameras of overlapping tasks answer the same click. */
  private popup: Popup | null = null;

  constructor(
    container: HTMLElement,
    private readonly onError: (message: string) => void,
  ) {
    container.setAttribute('data-idle', 'false');
    this.map = new MapLibreMap({
      container,
      style: {
        version: 8,
        sources: {},
        layers: [{ id: 'background', type: 'background', paint: { 'background-color': '#e8ebef' } }],
      },
      center: [0, 20],
      zoom: 1,
      attributionControl: { compact: true },
      // Keeps the drawn pixels readable, for screenshots and for the tests that check them.
      canvasContextAttributes: { preserveDrawingBuffer: true },
    });
    this.map.addControl(new NavigationControl({ visualizePitch: false }), 'top-right');
    this.map.addControl(new ScaleControl({ unit: 'metric' }), 'bottom-right');
    window.__aeromapMap = this.map;
    this.map.on('load', () => addMeasureLayers(this.map));
    this.map.on('dataloading', () => container.setAttribute('data-idle', 'false'));
    this.map.on('idle', () => container.setAttribute('data-idle', String(this.allLoaded())));
    this.map.on('error', (event) => this.reportError(event as { error?: { message?: string }; sourceId?: string }));
  }

  /** Resolves once the style is there, so layers can be added. */
  ready(): Promise<void> {
    return this.map.loaded() || this.map.isStyleLoaded() ? Promise.resolve() : new Promise((resolve) => this.map.once('load', () => resolve()));
  }

  destroy(): void {
    if (window.__aeromapMap === this.map) delete window.__aeromapMap;
    this.map.remove();
  }

  /** Every layer the page asked for has been added (or failed): idle may now mean "all drawn". */
  markLayersRequested(): void {
    this.layersRequested = true;
    this.touch();
  }

  private allLoaded(): boolean {
    if (!this.layersRequested) return false;
    for (const id of this.sources) {
      if (this.map.getSource(id) && !this.map.isSourceLoaded(id)) return false;
    }
    return true;
  }

  /** A change that will load or draw something: not idle until MapLibre says so again. */
  private touch(): void {
    this.map.getContainer().setAttribute('data-idle', 'false');
    this.map.triggerRepaint();
  }

  private reportError(event: { error?: { message?: string }; sourceId?: string }): void {
    const source = event.sourceId ?? '';
    if (source === OSM) {
      this.onError('OpenStreetMap tiles could not be loaded (no Internet connection?). The survey layers are not affected.');
      return;
    }
    const message = event.error?.message ?? 'unknown error';
    this.onError(source ? `A tile of ${source.replace(/^task-(\d+)-/, 'task $1, ')} failed to load: ${message}` : `Map error: ${message}`);
  }

  addRaster(taskId: number, kind: LayerKind, tilejson: TileJson, settings: LayerSettings): void {
    const id = sourceId(taskId, kind);
    this.map.addSource(id, {
      type: 'raster',
      tiles: [tileUrl(tilejson, kind, settings)],
      tileSize: 256,
      bounds: tilejson.bounds,
      minzoom: tilejson.minzoom,
      maxzoom: tilejson.maxzoom,
    });
    // Elevation layers under the orthophoto of the same task would be invisible; put them above it.
    this.map.addLayer(
      { id, type: 'raster', source: id, paint: { 'raster-opacity': settings.opacity, 'raster-fade-duration': 0 }, layout: { visibility: settings.visible ? 'visible' : 'none' } },
      this.firstAbove(kind),
    );
    this.sources.add(id);
    this.touch();
  }

  private firstAbove(kind: LayerKind): string | undefined {
    if (kind !== 'orthophoto') return this.map.getLayer(FIRST_MEASURE_LAYER) ? this.firstCameraLayer() ?? FIRST_MEASURE_LAYER : undefined;
    // Orthophotos go below every elevation layer.
    const layers = this.map.getStyle().layers ?? [];
    return layers.find((layer) => /^task-\d+-(dsm|dtm)$/.test(layer.id))?.id ?? this.firstCameraLayer() ?? (this.map.getLayer(FIRST_MEASURE_LAYER) ? FIRST_MEASURE_LAYER : undefined);
  }

  /** The lowest layer of points drawn over the rasters (cameras, control points). */
  private firstCameraLayer(): string | undefined {
    return (this.map.getStyle().layers ?? []).find((layer) => /-(cameras|control|control-arrows)$/.test(layer.id))?.id;
  }

  updateRaster(taskId: number, kind: LayerKind, tilejson: TileJson, settings: LayerSettings, previous: LayerSettings): void {
    const id = sourceId(taskId, kind);
    if (!this.map.getLayer(id)) return;
    this.map.setLayoutProperty(id, 'visibility', settings.visible ? 'visible' : 'none');
    this.map.setPaintProperty(id, 'raster-opacity', settings.opacity);
    const tiles = tileUrl(tilejson, kind, settings);
    if (tiles !== tileUrl(tilejson, kind, previous)) (this.map.getSource(id) as RasterTileSource).setTiles([tiles]);
    this.touch();
  }

  addCameras(taskId: number, shots: GeoJSON.FeatureCollection, visible: boolean): void {
    const id = sourceId(taskId, 'cameras');
    this.map.addSource(id, { type: 'geojson', data: shots });
    this.map.addLayer(
      {
        id,
        type: 'circle',
        source: id,
        layout: { visibility: visible ? 'visible' : 'none' },
        paint: { 'circle-radius': 6, 'circle-color': '#2563eb', 'circle-stroke-color': '#ffffff', 'circle-stroke-width': 2 },
      },
      this.map.getLayer(FIRST_MEASURE_LAYER) ? FIRST_MEASURE_LAYER : undefined,
    );
    this.sources.add(id);
    this.map.on('click', id, (event) => this.showCamera(event));
    this.map.on('mouseenter', id, () => this.cameraClicksEnabled && (this.map.getCanvas().style.cursor = 'pointer'));
    this.map.on('mouseleave', id, () => this.cameraClicksEnabled && (this.map.getCanvas().style.cursor = ''));
    this.touch();
  }

  /**
   * The control points and checkpoints of ground_control_points.geojson, green and orange, their errors as
   * arrows `factor` times as long; a click shows a point's figures and the photographs it was marked in.
   */
  addControlPoints(taskId: number, points: ControlPointCollection, thumbnail: (image: string) => string, visible: boolean): void {
    const id = sourceId(taskId, 'control');
    const colour: ExpressionSpecification = ['case', ['to-boolean', ['get', 'checkpoint']], '#ea580c', '#16a34a'];
    const below = this.map.getLayer(FIRST_MEASURE_LAYER) ? FIRST_MEASURE_LAYER : undefined;
    const layout = { visibility: visible ? ('visible' as const) : ('none' as const) };
    this.map.addSource(`${id}-arrows`, { type: 'geojson', data: residualArrows(points, exaggeration(points)) });
    this.map.addLayer({ id: `${id}-arrows`, type: 'line', source: `${id}-arrows`, layout, paint: { 'line-color': colour, 'line-width': 2.5 } }, below);
    this.map.addSource(id, { type: 'geojson', data: points });
    this.map.addLayer({ id, type: 'circle', source: id, layout, paint: { 'circle-radius': 7, 'circle-color': colour, 'circle-stroke-color': '#ffffff', 'circle-stroke-width': 2 } }, below);
    this.sources.add(id).add(`${id}-arrows`);
    this.map.on('click', id, (event) => this.showControlPoint(event, points, thumbnail));
    this.map.on('mouseenter', id, () => this.cameraClicksEnabled && (this.map.getCanvas().style.cursor = 'pointer'));
    this.map.on('mouseleave', id, () => this.cameraClicksEnabled && (this.map.getCanvas().style.cursor = ''));
    this.touch();
  }

  setOverlayVisible(taskId: number, kind: 'cameras' | 'control', visible: boolean): void {
    const id = sourceId(taskId, kind);
    for (const layer of [id, `${id}-arrows`]) {
      if (this.map.getLayer(layer)) this.map.setLayoutProperty(layer, 'visibility', visible ? 'visible' : 'none');
    }
    this.touch();
  }

  /** While a measuring tool is active a click is a vertex, not a question about a camera. */
  setCameraClicks(enabled: boolean): void {
    this.cameraClicksEnabled = enabled;
  }

  private showCamera(event: MapLayerMouseEvent): void {
    if (!this.cameraClicksEnabled) return;
    const feature: MapGeoJSONFeature | undefined = event.features?.[0];
    if (!feature || feature.geometry.type !== 'Point') return;
    const properties = feature.properties ?? {};
    const name = typeof properties.filename === 'string' ? properties.filename : 'Camera';
    const altitude = (feature.geometry.coordinates as number[])[2];
    const text = Number.isFinite(altitude) ? `${name} — ${altitude.toFixed(1)} m` : name;
    this.popup?.remove();
    this.popup = new Popup({ closeButton: true, className: 'aeromap-popup' })
      .setLngLat(feature.geometry.coordinates as [number, number])
      .setText(text)
      .addTo(this.map);
  }

  private showControlPoint(event: MapLayerMouseEvent, points: ControlPointCollection, thumbnail: (image: string) => string): void {
    if (!this.cameraClicksEnabled) return;
    const name = event.features?.[0]?.properties?.id;
    const point = points.features.find((feature) => feature.properties.id === name);
    if (!point) return;
    const content = document.createElement('div');
    content.className = 'control-popup';
    for (const line of describePoint(point.properties)) content.appendChild(document.createElement('p')).textContent = line;
    const exaggerated = exaggeration(points);
    if (exaggerated > 1) content.appendChild(document.createElement('p')).textContent = `Arrows drawn ${exaggerated} times their length`;
    for (const image of markedIn(point.properties)) {
      const preview = content.appendChild(document.createElement('img'));
      preview.src = thumbnail(image);
      preview.alt = image;
      preview.loading = 'lazy';
      // A compacted task has no photographs left to preview.
      preview.onerror = () => preview.remove();
    }
    this.popup?.remove();
    this.popup = new Popup({ closeButton: true, className: 'aeromap-popup', maxWidth: '320px' })
      .setLngLat(point.geometry.coordinates as [number, number])
      .setDOMContent(content)
      .addTo(this.map);
  }

  /** Lays the change between two surveys over the task layers (one at a time: a new one replaces it). */
  showChange(image: ChangeImage): void {
    this.clearChange();
    const canvas = document.createElement('canvas');
    canvas.width = image.width;
    canvas.height = image.height;
    canvas.getContext('2d')!.putImageData(new ImageData(image.rgba, image.width, image.height), 0, 0);
    this.map.addSource(CHANGE, { type: 'image', url: canvas.toDataURL('image/png'), coordinates: image.corners });
    this.map.addLayer({ id: CHANGE, type: 'raster', source: CHANGE, paint: { 'raster-fade-duration': 0, 'raster-resampling': 'nearest' } }, this.firstCameraLayer() ?? (this.map.getLayer(FIRST_MEASURE_LAYER) ? FIRST_MEASURE_LAYER : undefined));
    this.sources.add(CHANGE);
    this.touch();
  }

  clearChange(): void {
    if (this.map.getLayer(CHANGE)) this.map.removeLayer(CHANGE);
    if (this.map.getSource(CHANGE)) this.map.removeSource(CHANGE);
    this.sources.delete(CHANGE);
    this.touch();
  }

  setOsm(visible: boolean): void {
    if (visible && !this.map.getSource(OSM)) {
      this.map.addSource(OSM, {
        type: 'raster',
        tiles: ['https://tile.openstreetmap.org/{z}/{x}/{y}.png'],
        tileSize: 256,
        maxzoom: 19,
        attribution: '© <a href="https://www.openstreetmap.org/copyright">OpenStreetMap</a> contributors',
      });
      // Right above the background: under every task layer.
      const layers = this.map.getStyle().layers ?? [];
      this.map.addLayer({ id: OSM, type: 'raster', source: OSM }, layers[1]?.id);
    }
    if (this.map.getLayer(OSM)) this.map.setLayoutProperty(OSM, 'visibility', visible ? 'visible' : 'none');
    // The base map is optional: being offline must not keep the tests' idle flag down.
    this.touch();
  }

  /** leftInset: the width the panel covers, so that the survey is fitted into the part of the map one sees. */
  fitTo(bounds: [number, number, number, number][], leftInset = 0): void {
    if (bounds.length === 0) return;
    const all = new LngLatBounds();
    for (const [w, s, e, n] of bounds) all.extend([w, s]).extend([e, n]);
    const width = this.map.getContainer().clientWidth;
    const left = leftInset > 0 && width - leftInset > 240 ? leftInset + 30 : 30;
    this.map.fitBounds(all, { padding: { top: 30, bottom: 30, right: 50, left }, animate: false, maxZoom: 22 });
  }
}
