import { FieldValidationError } from 'src/common/http/errors';
import { findCredential, screenFields } from 'src/modules/workers/credential-screen';

// Real-looking, never real: assembled so no scanner mistakes this file for a leak.
const j = (...parts: string[]) => parts.join('');

const SECRETS: [string, string][] = [
  ['OpenAI-style key', j('use sk-', 'proj-', 'Xk2m9PqL4vR7tY1wZ8bN3cF6hJ0dS5aG')],
  ['Anthropic-style key', j('sk-', 'ant-', 'api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345')],
  ['Stripe live key', j('the key is sk_', 'live_', '51HqLyjWDarjtT1zdp7dc')],
  ['Stripe restricted key', j('rk_', 'test_', '4eC39HqLyjWDarjtT1zdp7dc')],
  ['AWS access key id', j('AKIA', 'IOSFODNN7EXAMPLE', ' is the id')],
  ['GitHub token', j('token ghp_', '1A2b3C4d5E6f7G8h9I0jKlMnOpQrStUvWxYz')],
  ['GitHub fine-grained token', j('github_pat_', '11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ')],
  ['Slack bot token', j('xoxb-', '123456789012-1234567890123-AbCdEfGhIjKlMnOp')],
  ['Google API key', j('AIza', 'SyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI')],
  ['GitLab token', j('glpat-', 'xxxxXXXX1234abcd5678')],
  ['virtual key', j('ob_', 'live_', 'a1b2c3d4e5f6a7b8c9d0')],
  ['private key block', j('-----BEGIN ', 'RSA PRIVATE KEY-----\nMIIEow...\n-----END RSA PRIVATE KEY-----')],
  ['OpenSSH private key', j('-----BEGIN ', 'OPENSSH PRIVATE KEY-----')],
  ['JWT', j('eyJhbGciOiJIUzI1NiJ9', '.eyJzdWIiOiIxMjM0NTY3ODkwIn0', '.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U')],
  ['bearer header', j('Authorization: Bearer ', 'a8f5f167f44f4964e6c998dee827110c')],
  ['password assignment', 'then log in with password=hunter2 and continue'],
  ['quoted password', 'config: { password: "S3cure!Pass" }'],
  ['api_key assignment', 'api_key: 9f8e7d6c5b4a'],
  ['client secret', 'client_secret = abc123-def456'],
  ['credentials in a URL', 'clone https://deploy:t0ps3cret@git.example.com/repo.git'],
];

const INNOCENT = [
  'Review every pull request and comment on failing tests.',
  'Rotate the API key when it expires and tell the owner.',
  'Never paste a password into the ticket; ask the user to reset it.',
  'The password: must be at least twelve characters long.',
  'Summarize the skills section of each resume (sk- prefixed SKUs are fine to mention).',
  'Count the tokens used per request and report the total.',
  'Use the token = <redacted> placeholder in examples.',
  'Visit https://docs.example.com/guide and https://example.com:8443/path?q=1 for details.',
  'Email alice@example.com with the weekly report.',
  'The build id is 2024-05-01T10:00:00Z and the job number is 12345.',
  'Set secret: {{ from the vault }} at deploy time.',
  'Bearer tokens are issued by the identity provider; never log them.',
  'Deploy to the ob_test workspace first.',
  'The SHA is 3f786850e387550fdab836ed7e6dc881de23001b.',
];

describe('credential screen', () => {
  it.each(SECRETS)('recognizes %s', (_, text) => {
    expect(findCredential(text)).not.toBeNull();
  });

  it.each(INNOCENT)('lets innocent text pass: %s', (text) => {
    expect(findCredential(text)).toBeNull();
  });

  it('names every offending field and never echoes the value', () => {
    const secret = j('sk-', 'proj-', 'Xk2m9PqL4vR7tY1wZ8bN3cF6hJ0dS5aG');
    let caught: unknown;
    try {
      screenFields([
        [['display_name'], 'Reviewer'],
        [['instructions'], `use ${secret}`],
        [['body', 'instructions'], 'password=hunter2'],
      ]);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(FieldValidationError);
    const body = (caught as FieldValidationError).getResponse();
    expect((caught as FieldValidationError).getStatus()).toBe(422);
    expect((body as { detail: { loc: unknown[] }[] }).detail.map((e) => e.loc)).toEqual([
      ['body', 'instructions'],
      ['body', 'body', 'instructions'],
    ]);
    expect(JSON.stringify(body)).not.toContain(secret);
    expect(JSON.stringify(body)).not.toContain('hunter2');
  });
});
