// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE node_gate
#include <caf/test/dsl.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "cafmq/actors/config.hpp"
#include "cafmq/actors/node.hpp"
#include "cafmq/actors/runner.hpp"
#include "nodes/node_auth.hpp"
#include "support/stand_ins.hpp"

using namespace caf;
using namespace cafmq;
using namespace cafmq::actors;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

struct gate_fixture : fixture {
  gate_fixture() {
    cfg.max_poll_wait = 1h;
  }

  // Asks the gate for a nonce.
  std::string hello(const gate_actor& g) {
    self->send(g, hello_atom::value);
    sched.run();
    std::string result;
    self->receive(
      [&](const std::string& x) { result = x; },
      [&](error& err) { CAF_FAIL("hello failed: " << render(err)); });
    return result;
  }

  // Answers with `proof`; the node handle or the error.
  expected<node_actor> auth(const gate_actor& g, const std::string& proof) {
    self->send(g, auth_atom::value, proof);
    sched.run();
    expected<node_actor> result{error{}};
    self->receive([&](node_actor& x) { result = std::move(x); },
                  [&](error& err) { result = std::move(err); });
    return result;
  }

  actors::logger test_log() {
    return actors::logger{[logs = logs](const log_record& x) {
      logs->push_back(x);
    }};
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(node_gate_tests, gate_fixture)

CAF_TEST(the proof is the hex sha256 of nonce and secret) {
  // SHA-256("abc"), the FIPS 180-2 example.
  CAF_CHECK_EQUAL(node_proof("ab", "c"), "ba7816bf8f01cfea414140de5dae2223b003"
                                         "61a396177a9cb410ff61f20015ad");
  CAF_CHECK(same_proof("abc", "abc"));
  CAF_CHECK(!same_proof("abc", "abd"));
  CAF_CHECK(!same_proof("abc", "abcd"));
  CAF_CHECK(!same_proof("", ""));
  auto x = make_nonce();
  CAF_CHECK_EQUAL(x.size(), 64u);
  CAF_CHECK_NOT_EQUAL(x, make_nonce());
}

CAF_TEST(the gate hands out the node for a proof of its secret only once) {
  start();
  auto n = spawn_node(sys, rt);
  auto g = spawn_gate(sys, n, "secret", test_log());
  sched.run();
  auto nonce = hello(g);
  CAF_CHECK_EQUAL(nonce.size(), 64u);
  auto proof = node_proof(nonce, "secret");
  auto got = auth(g, proof);
  CAF_REQUIRE(got);
  CAF_CHECK(*got == n);
  CAF_CHECK(logged("peer authenticated"));
  // The nonce is used up: the same proof again is refused.
  auto replay = auth(g, proof);
  CAF_REQUIRE(!replay);
  CAF_CHECK_EQUAL(code_of(replay.error()), errc::access_denied);
  // A fresh nonce per hello.
  auto second = hello(g);
  CAF_CHECK_NOT_EQUAL(second, nonce);
  auto stale = auth(g, proof);
  CAF_REQUIRE(!stale);
  CAF_CHECK_EQUAL(code_of(stale.error()), errc::access_denied);
  CAF_CHECK(logged("refused a peer"));
  anon_send_exit(g, exit_reason::user_shutdown);
}

CAF_TEST(the gate refuses a wrong secret and an empty proof) {
  start();
  auto g = spawn_gate(sys, spawn_node(sys, rt), "secret", test_log());
  sched.run();
  auto wrong = auth(g, node_proof(hello(g), "Secret"));
  CAF_REQUIRE(!wrong);
  CAF_CHECK_EQUAL(code_of(wrong.error()), errc::access_denied);
  hello(g);
  auto empty = auth(g, "");
  CAF_REQUIRE(!empty);
  CAF_CHECK_EQUAL(code_of(empty.error()), errc::access_denied);
  auto refusals = std::count_if(logs->begin(), logs->end(), [](auto& x) {
    return x.message == "refused a peer";
  });
  CAF_CHECK_EQUAL(refusals, 2);
  anon_send_exit(g, exit_reason::user_shutdown);
}

CAF_TEST(the node forwards to the runtime and ends with it) {
  start();
  auto n = spawn_node(sys, rt);
  auto g = spawn_gate(sys, n, "secret", test_log());
  sched.run();
  self->send(n, pause_atom::value, std::string{"c"});
  settle();
  self->receive([](bool) {});
  CAF_CHECK_EQUAL(state().ctx->cfg.node, "test");
  self->send(n, stats_atom::value);
  settle();
  self->receive([](const runner_stats& x) { CAF_CHECK_EQUAL(x.running, 0); });
  anon_send_exit(rt, exit_reason::user_shutdown);
  settle();
  rt = nullptr;
  auto& node_ref = deref<node_actor::base>(n);
  CAF_CHECK(node_ref.getf(abstract_actor::is_terminated_flag));
  auto& gate_ref = deref<gate_actor::base>(g);
  CAF_CHECK(gate_ref.getf(abstract_actor::is_terminated_flag));
}

CAF_TEST(publishing needs a secret without tls and a middleman) {
  runner_config x = cfg;
  x.database_url = "postgresql://nowhere.invalid/none";
  x.publish.port = 0;
  auto no_secret = spawn_runner(sys, x);
  CAF_REQUIRE(!no_secret);
  CAF_CHECK_EQUAL(code_of(no_secret.error()), errc::invalid_argument);
  CAF_CHECK(render(no_secret.error()).find("secret") != std::string::npos);
  x.publish.secret = "s";
  auto no_middleman = spawn_runner(sys, x);
  CAF_REQUIRE(!no_middleman);
  CAF_CHECK(render(no_middleman.error()).find("middleman")
            != std::string::npos);
}

CAF_TEST(bad tls files are refused before publishing) {
  tls_options tls;
  tls.certificate = "/nonexistent/node.pem";
  tls.key = "/nonexistent/node.key";
  tls.cafile = "/nonexistent/ca.pem";
  auto missing = check_tls_files(tls);
  CAF_CHECK_EQUAL(code_of(missing), errc::invalid_argument);
  CAF_CHECK(render(missing).find("/nonexistent/node.pem") != std::string::npos);
  char name[] = "/tmp/cafmq-not-pem-XXXXXX";
  auto fd = mkstemp(name);
  CAF_REQUIRE(fd >= 0);
  CAF_CHECK_EQUAL(write(fd, "not a certificate\n", 18), 18);
  close(fd);
  tls.certificate = name;
  auto garbage = check_tls_files(tls);
  CAF_CHECK(render(garbage).find("cannot load the TLS certificate")
            != std::string::npos);
  std::remove(name);
  tls.key.clear();
  CAF_CHECK(render(check_tls_files(tls)).find("together") != std::string::npos);
}

CAF_TEST(cafmq node options come from the ini file and the command line) {
  actors::config c;
  std::istringstream ini{"[cafmq.publish]\nport=26301\nsecret=\"from ini\"\n"
                         "host=\"0.0.0.0\"\n"};
  std::string arg0 = "prog";
  std::string arg1 = "--openssl.certificate=/etc/n.pem";
  char* argv[] = {arg0.data(), arg1.data()};
  auto err = c.parse(2, argv, ini);
  CAF_REQUIRE_EQUAL(render(err), render(caf::error{}));
  auto x = c.runner(nullptr);
  CAF_REQUIRE(x);
  CAF_REQUIRE(x->publish.port);
  CAF_CHECK_EQUAL(*x->publish.port, 26301);
  CAF_CHECK_EQUAL(x->publish.secret, "from ini");
  CAF_CHECK_EQUAL(x->publish.host, "0.0.0.0");
  CAF_CHECK_EQUAL(x->publish.tls.certificate, "/etc/n.pem");
  // The command line wins over the file.
  std::istringstream again{"[cafmq.publish]\nport=26301\n"};
  std::string arg2 = "--cafmq.publish.port=26302";
  char* argv2[] = {arg0.data(), arg2.data()};
  actors::config d;
  CAF_REQUIRE_EQUAL(render(d.parse(2, argv2, again)), render(caf::error{}));
  auto y = d.runner(nullptr);
  CAF_REQUIRE(y && y->publish.port);
  CAF_CHECK_EQUAL(*y->publish.port, 26302);
}

CAF_TEST(publishing is off by default and the port is checked) {
  actors::config c;
  auto x = c.runner(nullptr);
  CAF_REQUIRE(x);
  CAF_CHECK(!x->publish.enabled());
  CAF_CHECK_EQUAL(x->publish.host, "127.0.0.1");
  c.node_port = 70000;
  CAF_CHECK_EQUAL(code_of(c.runner(nullptr).error()), errc::invalid_argument);
}

CAF_TEST_FIXTURE_SCOPE_END()
