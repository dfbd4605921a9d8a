// The official openai npm client against BASE_URL: streaming chat, streaming completions and a
// non-streamed chat. Prints what the client parsed, one JSON line per call, with the fields that
// differ between any two calls of a server (id, created) blanked, so that a direct run and a run
// through `retrace record` can be compared byte for byte.
// Usage: node record_openai_client.mjs BASE_URL API_KEY COOKIE SESSION
const root = process.env.RETRACE_ROOT;
const { default: OpenAI } = await import(`${root}/tests/npm/node_modules/openai/index.mjs`);
const [baseURL, apiKey, cookie, session] = process.argv.slice(2);

const client = new OpenAI({
  baseURL,
  apiKey,
  maxRetries: 0,
  timeout: 20000,
  defaultHeaders: { Cookie: cookie, "X-Conversation": session },
});

const blank = (object) => JSON.stringify(object, (key, value) =>
  key === "id" || key === "created" ? "" : value);

const lines = [];
{
  const stream = await client.chat.completions.create({
    model: "retrace-sim",
    messages: [{ role: "user", content: "Tell me about the sea." }],
    max_tokens: 24,
    temperature: 0,
    stream: true,
    logprobs: true,
    top_logprobs: 2,
    return_token_ids: true,
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(blank(chunk));
  lines.push({ call: "chat-stream", chunks });
}
{
  const stream = await client.completions.create({
    model: "retrace-sim",
    prompt: "Once upon a time",
    max_tokens: 24,
    temperature: 0,
    stream: true,
    logprobs: 1,
    return_token_ids: true,
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(blank(chunk));
  lines.push({ call: "completions-stream", chunks });
}
{
  const response = await client.chat.completions.create({
    model: "retrace-sim",
    messages: [{ role: "user", content: "Name three colours." }],
    max_tokens: 16,
    temperature: 0,
  });
  lines.push({ call: "chat", response: blank(response) });
}
for (const line of lines) console.log(JSON.stringify(line));
