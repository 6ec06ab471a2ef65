// An elevation profile drawn as a small SVG chart: height against distance along the line, gaps where the model
// has none, the lowest and highest heights and the length written at the axes.
import type { ProfilePoint } from './dem.ts';
import { formatElevation, formatLength } from './format.ts';
import { HEIGHT, PAD, WIDTH, profilePaths } from './profile.ts';
import './profile-chart.css';


export function ProfileChart({ points }: { points: ProfilePoint[] }) {
  const known = points.filter((p) => p.height !== null).map((p) => p.height!);
  if (!known.length) return null;
  const [low, high] = [Math.min(...known), Math.max(...known)];
  const length = points[points.length - 1].distance;
  return (
    <svg class="profile-chart" viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label={`Elevation profile over ${formatLength(length)}: from ${formatElevation(low)} to ${formatElevation(high)}`}>
      <rect x="0" y="0" width={WIDTH} height={HEIGHT} class="profile-frame" />
      {profilePaths(points).map((path) => (
        <polyline key={path} points={path} class="profile-line" />
      ))}
      <text x={PAD.left} y="11">{formatElevation(high)}</text>
      <text x={PAD.left} y={HEIGHT - 5}>{formatElevation(low)}</text>
      <text x={WIDTH - PAD.right} y={HEIGHT - 5} text-anchor="end">{formatLength(length)}</text>
    </svg>
  );
}
