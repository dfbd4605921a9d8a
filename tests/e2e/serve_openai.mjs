// The official `openai` npm client (tests/npm, pinned 6.x) against retrace serve: it must list the
// model, stream chat and completions parsing every chunk, and get the same text streamed as not.
// Usage: node serve_openai.mjs ROOT BASE_URL
const [root, baseUrl] = process.argv.slice(2);
const { default: OpenAI } = await import(`${root}/tests/npm/node_modules/openai/index.mjs`);
const client = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: "not-needed", maxRetries: 0, timeout: 30000 });

function expect(condition, message) {
  if (!condition) {
    console.error(`FAIL: ${message}`);
    process.exit(1);
  }
}

const models = await client.models.list();
expect(models.data.length === 1 && models.data[0].id === "retrace-sim", `models: ${JSON.stringify(models.data)}`);
const model = models.data[0].id;

// Completions.
const request = { model, prompt: "The history of the river", max_tokens: 48, temperature: 0 };
const whole = await client.completions.create(request);
expect(whole.choices[0].text.length > 20, `completion text: ${JSON.stringify(whole)}`);
async function streamCompletion() {
  const stream = await client.completions.create({ ...request, stream: true, stream_options: { include_usage: true } });
  let text = "", chunks = 0, usage = null, finish = null;
  for await (const chunk of stream) {
    chunks++;
    expect(chunk.object === "text_completion" && chunk.model === model, `chunk: ${JSON.stringify(chunk)}`);
    if (chunk.choices.length) {
      text += chunk.choices[0].text;
      finish = chunk.choices[0].finish_reason ?? finish;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  return { text, chunks, usage, finish };
}
const streamed = await streamCompletion();
expect(streamed.text === whole.choices[0].text, `streamed completion differs:\n${streamed.text}\nvs\n${whole.choices[0].text}`);
expect(streamed.chunks > 2, "completion stream had too few chunks");
expect(streamed.usage && streamed.usage.completion_tokens === whole.usage.completion_tokens, "stream usage");
expect(streamed.finish === whole.choices[0].finish_reason, "finish_reason");

// Chat, with logprobs.
const chatRequest = {
  model,
  messages: [{ role: "system", content: "You answer briefly." }, { role: "user", content: "Describe a garden." }],
  max_tokens: 40,
  temperature: 0,
  logprobs: true,
  top_logprobs: 2,
};
const chat = await client.chat.completions.create(chatRequest);
const content = chat.choices[0].message.content;
expect(content.length > 10 && chat.choices[0].message.role === "assistant", `chat: ${JSON.stringify(chat)}`);
const chatStream = await client.chat.completions.create({ ...chatRequest, stream: true });
let chatText = "", logprobTokens = [];
for await (const chunk of chatStream) {
  expect(chunk.object === "chat.completion.chunk", `chat chunk: ${JSON.stringify(chunk)}`);
  const choice = chunk.choices[0];
  if (!choice) continue;
  chatText += choice.delta.content ?? "";
  for (const entry of choice.logprobs?.content ?? []) logprobTokens.push(entry.token);
}
expect(chatText === content, `streamed chat differs:\n${chatText}\nvs\n${content}`);
expect(logprobTokens.join("") === content, "chat logprob tokens spell the content");

// Many streams at once: identical to the lone request (no --batch-variance).
const together = await Promise.all(Array.from({ length: 16 }, () => streamCompletion()));
for (const result of together) expect(result.text === whole.choices[0].text, "a concurrent stream differs");

console.log("openai client: ok");
