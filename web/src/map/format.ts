// Human-readable measurement values: the unit changes where a person would switch (m → km, m² → ha).

const number = (value: number, digits: number) =>
  value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

export function formatLength(metres: number): string {
  if (Math.abs(metres) >= 1000) return `${number(metres / 1000, 3)} km`;
  return `${number(metres, 2)} m`;
}

export function formatArea(squareMetres: number): string {
  if (Math.abs(squareMetres) >= 10_000) return `${number(squareMetres / 10_000, 3)} ha (${number(squareMetres, 0)} m²)`;
  return `${number(squareMetres, 2)} m²`;
}

export function formatVolume(cubicMetres: number): string {
  return `${number(cubicMetres, Math.abs(cubicMetres) >= 1000 ? 0 : 2)} m³`;
}

export function formatElevation(metres: number): string {
  return `${number(metres, 2)} m`;
}
