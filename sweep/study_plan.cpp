// Study plan: the runs, study.json, the requests every run sends and the cold cache's body
// changes, and the greedy check before any traffic.
#include <boost/json.hpp>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "base/private_file.hpp"
#include "llm/llm.hpp"
#include "net/http_rules.hpp"
#include "sweep/study.hpp"

namespace retrace::sweep {

namespace json = boost::json;

CacheControl cache_control(const std::string& server_kind) {
  if (server_kind == "vllm" || server_kind == "retrace-serve") return CacheControl::salt;
  if (server_kind == "sglang") return CacheControl::flush;
  if (server_kind == "llama.cpp") return CacheControl::no_cache_prompt;
  return CacheControl::none;
}

std::string cache_method(CacheControl control, const std::string& state) {
  if (state == "warm") return "every request sent once first, then the measured pass";
  switch (control) {
    case CacheControl::salt: return "a fresh cache_salt on every request";
    case CacheControl::flush: return "POST /flush_cache before the run";
    case CacheControl::no_cache_prompt: return "cache_prompt false on every request";
    case CacheControl::none: break;
  }
  return "no cache control known for this server: sent as is";
}

std::vector<std::string> parse_cache_states(std::string_view text) {
  std::vector<std::string> states;
  std::set<std::string> seen;
  while (true) {
    auto comma = text.find(',');
    std::string item(net::trim_ows(text.substr(0, comma)));
    if (item != "cold" && item != "warm")
      throw std::invalid_argument("--cache: '" + item + "' is not a cache state (cold or warm)");
    if (!seen.insert(item).second) throw std::invalid_argument("--cache: " + item + " is listed twice");
    states.push_back(item);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return states;
}

void plan_study(Plan& plan, StudySettings& settings) {
  if (plan.levels.empty()) throw std::invalid_argument("a study needs at least one --concurrency level");
  if (settings.cache.empty()) throw std::invalid_argument("a study needs at least one --cache state");
  if (plan.repeats < 1) throw std::invalid_argument("--repeat must be at least 1");
  // Bounded before anything is allocated: every run is a trace file and a line of plan.json, and
  // --same-prompt's requests are each a copy of the prompt held for the run.
  const std::uint64_t runs = 1 + std::uint64_t(plan.levels.size()) * settings.cache.size() * std::uint64_t(plan.repeats);
  if (runs > kMaxStudyRuns)
    throw std::invalid_argument("--repeat " + std::to_string(plan.repeats) + ": the study would make " +
                                std::to_string(runs) + " runs (" + std::to_string(plan.levels.size()) +
                                " levels x " + std::to_string(settings.cache.size()) + " cache states x " +
                                std::to_string(plan.repeats) + " repeats + the baseline), more than " +
                                std::to_string(kMaxStudyRuns) + "; lower --repeat or the levels");
  if (settings.same_prompt && *settings.same_prompt > kMaxSamePrompt)
    throw std::invalid_argument("--same-prompt " + std::to_string(*settings.same_prompt) + ": more than " +
                                std::to_string(kMaxSamePrompt) +
                                " requests a run (each a copy of the prompt in memory); split it into runs with --repeat");
  plan.runs.clear();
  settings.run_cache.clear();
  auto add = [&](double level, const std::string& cache, int repeat, std::string name) {
    PlannedRun run;
    run.level = level;
    run.repeat = repeat;
    run.name = std::move(name);
    run.file = run.name + ".rtrace";
    run.baseline = plan.runs.empty();
    plan.runs.push_back(run);
    settings.run_cache.push_back(cache);
  };
  add(plan.levels.front(), settings.cache.front(), 0, "baseline");
  for (double level : plan.levels)
    for (const auto& cache : settings.cache)
      for (int repeat = 1; repeat <= plan.repeats; ++repeat)
        add(level, cache, repeat, "c" + level_text(level) + "-" + cache + "-r" + std::to_string(repeat));
}

void save_study(const StudySettings& settings, const std::filesystem::path& dir) {
  json::array cache, runs;
  for (const auto& state : settings.cache) cache.emplace_back(state);
  for (const auto& state : settings.run_cache) runs.emplace_back(state);
  json::object root{{"retrace_study", 1},
                    {"cache", std::move(cache)},
                    {"same_prompt", settings.same_prompt ? json::value(*settings.same_prompt) : json::value(nullptr)},
                    {"greedy", settings.greedy},
                    {"allow_sampling", settings.allow_sampling},
                    {"run_cache", std::move(runs)}};
  json::array targets;
  for (const auto& target : settings.targets) targets.emplace_back(target);
  root["targets"] = std::move(targets);
  write_private_file(dir / "study.json", json::serialize(root) + "\n");
}

StudySettings load_study(const std::filesystem::path& dir) {
  auto path = (dir / "study.json").string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read (is " + dir.string() +
                                    " a study directory made by `retrace study --out`?)");
  std::ostringstream text;
  text << in.rdbuf();
  json::error_code ec;
  auto root = json::parse(text.str(), ec);
  auto bad = [&](const std::string& what) { return std::runtime_error(path + ": " + what); };
  if (ec || !root.is_object() || !root.get_object().contains("retrace_study"))
    throw bad("not a retrace study file");
  const auto& object = root.get_object();
  StudySettings settings;
  auto strings = [&](std::string_view key) {
    std::vector<std::string> out;
    auto* value = object.if_contains(key);
    if (!value || !value->is_array()) throw bad("field '" + std::string(key) + "' must be an array");
    for (const auto& item : value->get_array()) {
      if (!item.is_string() || (item.get_string() != "cold" && item.get_string() != "warm"))
        throw bad("field '" + std::string(key) + "' must hold \"cold\" or \"warm\"");
      out.emplace_back(item.get_string());
    }
    return out;
  };
  settings.cache = strings("cache");
  settings.run_cache = strings("run_cache");
  if (auto* same = object.if_contains("same_prompt"); same && same->is_number())
    settings.same_prompt = same->to_number<std::size_t>();
  auto flag = [&](std::string_view key) {
    auto* value = object.if_contains(key);
    return value && value->is_bool() && value->get_bool();
  };
  if (auto* targets = object.if_contains("targets")) {
    if (!targets->is_array()) throw bad("field 'targets' must be an array of URLs");
    for (const auto& target : targets->get_array()) {
      if (!target.is_string()) throw bad("field 'targets' must be an array of URLs");
      settings.targets.emplace_back(target.get_string());
    }
  }
  settings.greedy = flag("greedy");
  settings.allow_sampling = flag("allow_sampling");
  return settings;
}

LoadedTrace study_input(const LoadedTrace& input, const Plan& plan, const StudySettings& settings) {
  auto options = to_replay_options(plan.replay, plan.target, 1, {});
  if (settings.same_prompt) {
    options.limit = 1;
    options.requests = *settings.same_prompt;
  }
  auto chosen = replay::select_exchanges(input.exchanges, options, false);
  if (settings.same_prompt && !chosen.empty()) {
    const std::uint64_t prompt = input.exchanges[chosen.front()].request.body.size();
    if (prompt * chosen.size() > kMaxSamePromptBytes)
      throw std::invalid_argument("--same-prompt " + std::to_string(chosen.size()) + ": " + std::to_string(chosen.size()) +
                                  " copies of a " + std::to_string(prompt) + "-byte request would hold " +
                                  std::to_string(prompt * chosen.size() >> 20) + " MiB, more than " +
                                  std::to_string(kMaxSamePromptBytes >> 20) + " MiB; lower it and add --repeat");
  }
  LoadedTrace requests;
  requests.header = input.header;
  requests.exchanges.reserve(chosen.size());
  for (std::size_t position : chosen) {
    const Exchange& source = input.exchanges[position];
    if (!llm::is_inference_request(source.request.target, source.request.body)) continue;
    Exchange copy;
    copy.id = requests.exchanges.size();
    copy.key = source.key;
    copy.session_id = source.session_id;
    copy.request = source.request;
    copy.labels = source.labels;
    copy.labels.push_back({"study_prompt", std::to_string(source.id)});
    copy.expected = source.expected;
    requests.exchanges.push_back(std::move(copy));
  }
  if (requests.exchanges.empty())
    throw std::invalid_argument(plan.trace + ": no inference request to study (after --filter, --limit)");
  return requests;
}

LoadedTrace cold_input(const LoadedTrace& requests, CacheControl control, const std::string& salt_prefix) {
  if (control != CacheControl::salt && control != CacheControl::no_cache_prompt) return requests;
  LoadedTrace out = requests;
  for (auto& exchange : out.exchanges) {
    std::vector<std::pair<std::string, std::string>> set;
    if (control == CacheControl::salt)
      set.emplace_back("cache_salt", json::serialize(json::value(salt_prefix + "-" + std::to_string(exchange.id))));
    else
      set.emplace_back("cache_prompt", "false");
    exchange.request.body = replay::apply_body_overrides(exchange.request.body, set, {});
  }
  return out;
}

void check_greedy(const LoadedTrace& requests, const Plan& plan, const StudySettings& settings) {
  if (settings.allow_sampling) return;
  auto options = to_replay_options(plan.replay, plan.target, 1, {});
  report::SamplingAudit audit;
  for (const auto& exchange : requests.exchanges)
    count_sampling(audit_body(replay::apply_body_overrides(exchange.request.body, options.set, options.unset)),
                   audit);
  if (audit.all_greedy()) return;
  std::string why;
  if (audit.temperature_unset > 0)
    why += std::to_string(audit.temperature_unset) + " leave the temperature to the server's defaults";
  if (audit.sampled > 0)
    why += (why.empty() ? "" : ", ") + std::to_string(audit.sampled) + " ask for a temperature above 0";
  throw std::invalid_argument(
      std::to_string(audit.exchanges - audit.greedy) + " of " + std::to_string(audit.exchanges) +
      " requests are not greedy (" + why +
      "): their differences would be sampling, not evidence about determinism. Add --greedy to "
      "send temperature 0, or --allow-sampling to study them as sent (every summary then says so)");
}

}  // namespace retrace::sweep
