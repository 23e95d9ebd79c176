import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Realm, UserSession } from '../model/types.js';
import type { AuthSession } from './auth-session.js';

/** What a page shows besides its template: typed values, field errors, a message, the status. */
export interface FormState {
  values?: Record<string, string>;
  errors?: Record<string, string>;
  message?: { type: 'error' | 'info' | 'success'; text: string };
  status?: number;
  /** The page's title instead of its usual one (the registration of an organization's invitee). */
  title?: string;
}

export type PageLink = { href: string; label: string };

/**
 * The pages the protocol endpoints show (Keycloak's LoginFormsProvider): implemented by `pages/`, handed to
 * `protocol/` through the server context, so neither imports the other.
 */
export interface LoginForms {
  error(reply: FastifyReply, realm: Realm | null, text: string, status?: number, link?: PageLink): Promise<FastifyReply>;
  /** A request the application got wrong: the detail is for its developers, the rest of the page for the user. */
  requestError(reply: FastifyReply, realm: Realm, detail: string, status?: number): Promise<FastifyReply>;
  info(reply: FastifyReply, realm: Realm, title: string, text: string, link?: PageLink, status?: number): Promise<FastifyReply>;
  login(request: FastifyRequest, reply: FastifyReply, realm: Realm, auth: AuthSession, state: FormState): Promise<FastifyReply>;
  /** The authorization request's first page: the browser flow may send the browser to an identity provider, else the login page. */
  firstPage(request: FastifyRequest, reply: FastifyReply, realm: Realm, auth: AuthSession): Promise<FastifyReply>;
  registration(request: FastifyRequest, reply: FastifyReply, realm: Realm, auth: AuthSession, state: FormState): Promise<FastifyReply>;
}

/** A page by its template name (Keycloak's LoginFormsProvider#createForm): how `protocol/` shows its own pages. */
export interface PageSender {
  send(reply: FastifyReply, realm: Realm, template: string, data: Record<string, unknown>, status?: number, options?: { frameSrc?: string[] }): Promise<FastifyReply>;
}

/**
 * How a finished browser login answers the client (Keycloak's LoginProtocol#authenticated): implemented by
 * `protocol/openid-connect`, called by `completeLogin` with the code it issued.
 */
export interface LoginProtocol {
  authenticated(request: FastifyRequest, reply: FastifyReply, realm: Realm, auth: AuthSession, session: UserSession, code: string): Promise<FastifyReply> | FastifyReply;
  /** The sign-in ended without signing in (the user declined the terms or the consent): an error back to the client. */
  refused(request: FastifyRequest, reply: FastifyReply, realm: Realm, auth: AuthSession, error: 'access_denied', description?: string): Promise<FastifyReply> | FastifyReply;
}
