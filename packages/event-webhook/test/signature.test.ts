import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { WebhookDispatcher } from '../src/delivery.js';
import { parseSecret, sign, signatureHeaders } from '../src/signature.js';
import { recordingLogger } from './helpers.js';
import { startReceiver } from './receiver.js';

// The test vector published with the Standard Webhooks reference libraries.
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

describe('Standard Webhooks signature', () => {
  it('matches the published test vector', () => {
    expect(sign(parseSecret(VECTOR.secret), VECTOR.id, VECTOR.timestamp, VECTOR.body)).toBe(VECTOR.signature);
  });

  it('builds the three headers with the timestamp in unix seconds', () => {
    const headers = signatureHeaders(parseSecret(VECTOR.secret), VECTOR.id, VECTOR.body, VECTOR.timestamp * 1000 + 999);
    expect(headers).toEqual({
      'webhook-id': VECTOR.id,
      'webhook-timestamp': '1614265330',
      'webhook-signature': VECTOR.signature,
    });
  });

  it('changes with any byte of id, timestamp or body', () => {
    const key = parseSecret(VECTOR.secret);
    expect(sign(key, VECTOR.id, VECTOR.timestamp + 1, VECTOR.body)).not.toBe(VECTOR.signature);
    expect(sign(key, `${VECTOR.id}x`, VECTOR.timestamp, VECTOR.body)).not.toBe(VECTOR.signature);
    expect(sign(key, VECTOR.id, VECTOR.timestamp, '{"test":2432232314}')).not.toBe(VECTOR.signature);
  });

  it.each([
    ['no prefix', 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
    ['an empty key', 'whsec_'],
    ['not base64', 'whsec_not*base64!'],
    ['bad padding', 'whsec_abc'],
  ])('refuses a secret with %s, without echoing it', (_, secret) => {
    expect(() => parseSecret(secret)).toThrow(/whsec_/);
    try {
      parseSecret(secret);
    } catch (error) {
      if (secret.length > 6) expect((error as Error).message).not.toContain(secret.slice(6));
    }
  });

  it('verifies with the standardwebhooks package on a real delivery, retries keeping the webhook-id', async () => {
    const receiver = await startReceiver((n) => (n === 1 ? 503 : 200));
    const key = parseSecret(VECTOR.secret);
    const body = JSON.stringify({ type: 'LOGIN', user_name: 'ünïcode' });
    const dispatcher = new WebhookDispatcher({ logger: recordingLogger(), backoffMs: [50] });
    try {
      dispatcher.enqueue({
        url: receiver.url,
        headers: { 'Content-Type': 'application/json' },
        body,
        attemptHeaders: () => signatureHeaders(key, 'msg_abc', body),
        eventType: 'LOGIN',
      });
      await dispatcher.idle();
      const verifier = new Webhook(VECTOR.secret);
      expect(receiver.received).toHaveLength(2);
      for (const request of receiver.received) {
        expect(request.headers['webhook-id']).toBe('msg_abc');
        expect(verifier.verify(request.body, request.headers as Record<string, string>)).toEqual(JSON.parse(body));
      }
      const tampered = { ...(receiver.received[1].headers as Record<string, string>), 'webhook-id': 'msg_other' };
      expect(() => verifier.verify(receiver.received[1].body, tampered)).toThrow(/No matching signature/);
    } finally {
      await dispatcher.close(0);
      await receiver.close();
    }
  });
});
