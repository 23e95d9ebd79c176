/**
 * The server's error catalogue: every failure a caller can see has a status and a stable code,
 * so handlers throw and one place turns them into HTTP.
 */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'AppError';
  }
}

/** OAuth 2.0 error responses (`error`, `error_description`). */
export class OAuthError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly description: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
    this.name = 'OAuthError';
  }
}

export const badRequest = (message: string, field?: string) => new AppError(400, 'invalid_input', message, field);
export const notFound = (message: string) => new AppError(404, 'not_found', message);
export const conflict = (message: string, field?: string) => new AppError(409, 'conflict', message, field);
export const forbidden = (message = 'Forbidden') => new AppError(403, 'forbidden', message);
