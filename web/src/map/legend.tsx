// A layer's legend: its colour ramp, round values along it and a caption (elevation and Plant Health layers).
import { legendLabels } from './ramps.ts';

interface Props {
  /** The ramp as a CSS gradient, low to high. */
  gradient: string;
  range: [number, number];
  unit?: string;
  /** What the ramp says, for screen readers ("Viridis colour ramp from 10.0 m to 20.0 m"). */
  description: string;
  caption: string;
  testId: string;
}

export function Legend({ gradient, range: [min, max], unit, description, caption, testId }: Props) {
  return (
    <figure class="map-legend" data-testid={testId}>
      <div class="map-legend-bar" style={{ background: gradient }} role="img" aria-label={description} />
      <div class="map-legend-ticks" aria-hidden="true">
        {legendLabels(min, max, unit).map(({ text, at }) => (
          <span key={text} style={{ left: `${at * 100}%` }}>{text}</span>
        ))}
      </div>
      <figcaption class="muted">{caption}</figcaption>
    </figure>
  );
}
