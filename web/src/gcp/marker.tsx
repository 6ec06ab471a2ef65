// A photograph zoomed on where a point should be, to click the target in: the service's thumbnail view of the
// window, the prediction circled in the photograph and the mark drawn over it. The view stays put while marking,
// so that a second click corrects the first.
import { useEffect, useRef, useState } from 'preact/hooks';
import { type Mark, pixelAt, shownAt, viewWindow } from './points.ts';

export interface Sighting {
  image: string;
  x: number;
  y: number;
  width: number;
  height: number;
}

const MIN_ZOOM = 1;
const MAX_ZOOM = 6;
/** Pixels of the view's longer side (the service never makes it larger than the photograph). */
const VIEW_SIZE = 960;

/** A cross with an open centre, so that the target stays visible under it. */
const cross = ({ x, y }: { x: number; y: number }) => `M${x - 16} ${y}h11m10 0h11M${x} ${y - 16}v11m0 10v11`;

interface MarkerProps {
  photoUrl: string;
  pointName: string;
  sighting: Sighting;
  mark: Mark | undefined;
  /** How far to zoom first: far where the prediction is good, less where it is rough. */
  initialZoom: number;
  onMark: (mark: Mark | null) => void;
}

export function Marker({ photoUrl, pointName, sighting, mark, initialZoom, onMark }: MarkerProps) {
  const [zoom, setZoom] = useState(mark ? MAX_ZOOM - 2 : initialZoom);
  const [centre, setCentre] = useState<Mark>(mark ?? { x: sighting.x, y: sighting.y });
  const view = viewWindow(sighting.width, sighting.height, centre, zoom);
  const query = new URLSearchParams({
    size: String(VIEW_SIZE),
    quality: '90',
    center_x: String((centre.x + 0.5) / sighting.width),
    center_y: String((centre.y + 0.5) / sighting.height),
    zoom: String(zoom),
    draw_point: `${(sighting.x + 0.5) / sighting.width},${(sighting.y + 0.5) / sighting.height}`,
    point_color: 'ffd400',
    point_radius: String(Math.max(0.3, 2 / 2 ** (zoom - 1))),
  });
  const click = (event: MouseEvent) => {
    const image = event.currentTarget as HTMLImageElement;
    const box = image.getBoundingClientRect();
    onMark(pixelAt(view, box, { x: event.clientX - box.left, y: event.clientY - box.top }));
  };
  const [shown, setShown] = useState<{ width: number; height: number } | null>(null);
  const figure = useRef<HTMLElement>(null);
  // Chosen from the strip below it, which may be scrolled far down on a phone.
  useEffect(() => figure.current?.scrollIntoView({ block: 'nearest' }), []);
  const marked = mark && shown ? shownAt(view, shown, mark) : null;
  return (
    <figure class="gcp-marker" ref={figure}>
      <div class="gcp-view">
        <img
          src={`${photoUrl}?${query}`}
          alt={`${sighting.image} around ${pointName}: click the target's centre`}
          data-window={[view.left, view.top, view.width, view.height].join(',')}
          onClick={click}
          onLoad={(e) => setShown({ width: e.currentTarget.clientWidth, height: e.currentTarget.clientHeight })}
          draggable={false}
        />
        {marked && (
          <svg class="gcp-cross" viewBox={`0 0 ${shown!.width} ${shown!.height}`} aria-hidden="true">
            <path class="halo" d={cross(marked)} />
            <path d={cross(marked)} />
          </svg>
        )}
      </div>
      <figcaption class="row">
        <span class="grow">
          {sighting.image}: {mark ? `marked at ${mark.x.toFixed(1)}, ${mark.y.toFixed(1)}` : 'not marked'}
        </span>
        <button type="button" onClick={() => setZoom(Math.min(MAX_ZOOM, zoom + 1))} disabled={zoom >= MAX_ZOOM}>
          Zoom in
        </button>
        <button type="button" onClick={() => setZoom(Math.max(MIN_ZOOM, zoom - 1))} disabled={zoom <= MIN_ZOOM}>
          Zoom out
        </button>
        <button type="button" onClick={() => setCentre(mark ?? { x: sighting.x, y: sighting.y })}>
          Centre
        </button>
        {mark && (
          <button type="button" class="danger" onClick={() => onMark(null)}>
            Remove mark
          </button>
        )}
      </figcaption>
    </figure>
  );
}
