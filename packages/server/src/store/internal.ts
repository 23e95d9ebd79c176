/** Redis takes whole milliseconds above zero; both stores round alike so they expire alike. */
export function wholeMs(name: string, value: number): number {
  if (!Number.isFinite(value) || value <= 0) {
    throw new RangeError(`${name} must be a positive number of milliseconds, got ${value}`);
  }
  return Math.ceil(value);
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
