// The official openai npm client against BASE_URL for the shapes 2026 traffic has: chat with tools
// (streamed and not), chat with n=2, responses.create streamed and not (with reasoning, and with a
// function tool), and embeddings (the client asks for base64 and decodes it itself). Prints what
// the client parsed, one JSON line per call, with what differs between any two requests of a
// server (ids, creation times) blanked, so that a direct run and a run through `retrace record` can
// be compared byte for byte. Exits 1 when a call parses to nothing.
// Usage: node record_openai_shapes_client.mjs ROOT BASE_URL
const [root, baseURL] = process.argv.slice(2);
const { default: OpenAI } = await import(`${root}/tests/npm/node_modules/openai/index.mjs`);
const client = new OpenAI({ baseURL, apiKey: "not-needed", maxRetries: 0, timeout: 20000 });

const BLANK = new Set(["id", "created", "created_at", "item_id", "call_id"]);
const blank = (object) => JSON.parse(JSON.stringify(object, (key, value) => (BLANK.has(key) ? "" : value)));
function expect(condition, message) {
  if (!condition) {
    console.error(`FAIL: ${message}`);
    process.exit(1);
  }
}

const model = "retrace-sim";
// ignore_eos (vLLM's, which retrace serve reads too): every answer runs to its limit, past the
// reasoning, so each has text or call arguments to parse.
const tools = [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }];
const messages = [{ role: "user", content: "Weather in Paris?" }];
const lines = [];

{
  const response = await client.chat.completions.create({ model, messages, tools, max_tokens: 12, temperature: 0, ignore_eos: true });
  const call = response.choices[0].message.tool_calls?.[0];
  expect(call && call.function.name === "get_weather" && JSON.parse(call.function.arguments).text,
         `chat tool call: ${JSON.stringify(response)}`);
  lines.push({ call: "chat-tools", response: blank(response) });
}
{
  const stream = await client.chat.completions.create({ model, messages, tools, max_tokens: 12, temperature: 0, ignore_eos: true, stream: true });
  const chunks = [];
  for await (const chunk of stream) chunks.push(blank(chunk));
  lines.push({ call: "chat-tools-stream", chunks });
}
{
  const response = await client.chat.completions.create({
    model, messages: [{ role: "user", content: "Two answers." }], n: 2, max_tokens: 10, temperature: 0.8, seed: 7,
  });
  expect(response.choices.length === 2, `n=2: ${JSON.stringify(response.choices)}`);
  lines.push({ call: "chat-n2", response: blank(response) });
}
for (const withTool of [false, true]) {
  const request = { model, input: "Weather in Paris?", instructions: "Be brief.", max_output_tokens: 12, temperature: 0, ignore_eos: true };
  if (withTool) request.tools = [{ type: "function", name: "get_weather", parameters: { type: "object" } }];
  const response = await client.responses.create(request);
  expect(response.output.length >= 1, `responses.create: ${JSON.stringify(response)}`);
  expect(withTool || response.output_text.length > 0, `responses.create output_text: ${JSON.stringify(response)}`);
  lines.push({ call: `responses${withTool ? "-tool" : ""}`, output_text: response.output_text, response: blank(response) });
  const stream = await client.responses.create({ ...request, stream: true });
  const events = [];
  let final = null;
  for await (const event of stream) {
    events.push(blank(event));
    if (event.type === "response.completed" || event.type === "response.incomplete") final = event.response;
  }
  expect(final && final.output.length === response.output.length, `responses stream end: ${JSON.stringify(events.at(-1))}`);
  lines.push({ call: `responses${withTool ? "-tool" : ""}-stream`, events });
}
{
  const response = await client.embeddings.create({ model, input: ["the sea", "the sky"] });
  expect(response.data.length === 2 && response.data[0].embedding.length > 0, `embeddings: ${JSON.stringify(response)}`);
  lines.push({ call: "embeddings", response: blank(response) });
}
for (const line of lines) console.log(JSON.stringify(line));
