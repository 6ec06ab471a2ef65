// Two surveys side by side: a second map over the main one, showing another task's orthophoto right of a divider
// that is dragged (or moved with the arrow keys) across the map. It follows the main map's view and lets every
// pointer through to it, so panning and measuring work as usual on both sides.
import { Map as MapLibreMap } from 'maplibre-gl';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { TileJson } from './layers.ts';
import { defaultSettings, tileUrl } from './layers.ts';
import type { MapController } from './map-controller.ts';
import { keyTarget } from './plant.ts';

/** How far an arrow key moves the divider, as a share of the map's width (PageUp and PageDown ten times more). */
const KEY_STEP = 0.05;

export function SwipeOverlay({ main, tilejson, name }: { main: MapController; tilejson: TileJson; name: string }) {
  const container = useRef<HTMLDivElement>(null);
  const [at, setAt] = useState(0.5);
  useEffect(() => {
    const follow = () => ({ center: main.map.getCenter(), zoom: main.map.getZoom(), bearing: main.map.getBearing(), pitch: main.map.getPitch() });
    const map = new MapLibreMap({
      container: container.current!,
      style: {
        version: 8,
        sources: { right: { type: 'raster', tiles: [tileUrl(tilejson, 'orthophoto', defaultSettings('orthophoto'))], tileSize: 256, bounds: tilejson.bounds, minzoom: tilejson.minzoom, maxzoom: tilejson.maxzoom } },
        layers: [
          { id: 'background', type: 'background', paint: { 'background-color': '#e8ebef' } },
          { id: 'right', type: 'raster', source: 'right', paint: { 'raster-fade-duration': 0 } },
        ],
      },
      interactive: false,
      attributionControl: false,
      ...follow(),
    });
    const sync = () => map.jumpTo(follow());
    main.map.on('move', sync);
    return () => {
      main.map.off('move', sync);
      map.remove();
    };
  }, [main, tilejson]);

  const drag = (event: PointerEvent) => {
    const handle = event.currentTarget as HTMLElement;
    const box = handle.parentElement!.getBoundingClientRect();
    handle.setPointerCapture(event.pointerId);
    const move = (e: PointerEvent) => setAt(Math.min(1, Math.max(0, (e.clientX - box.left) / box.width)));
    const stop = () => {
      handle.removeEventListener('pointermove', move);
      handle.removeEventListener('pointerup', stop);
    };
    handle.addEventListener('pointermove', move);
    handle.addEventListener('pointerup', stop);
  };
  const percent = Math.round(at * 100);
  return (
    <div class="swipe">
      <div class="swipe-map" ref={container} style={{ clipPath: `inset(0 0 0 ${at * 100}%)` }} data-testid="swipe-map" aria-hidden="true" />
      <div
        class="swipe-handle"
        style={{ left: `${at * 100}%` }}
        role="slider"
        tabIndex={0}
        aria-label={`Divider: ${name} to its right`}
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={percent}
        aria-valuetext={`${percent} % across`}
        onPointerDown={drag}
        onKeyDown={(event) => {
          const next = keyTarget(event.key, at, [0, 1], KEY_STEP);
          if (next === null) return;
          event.preventDefault();
          setAt(Math.min(1, Math.max(0, Math.round(next * 100) / 100)));
        }}
      />
    </div>
  );
}
