//! [`RateLimit`]: the middleware service, and its response future.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use http::header::{HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use http::{Request, Response, StatusCode};
use pin_project_lite::pin_project;
use slidelimit::{Answer, Decide, Decision};
use tower_service::Service;

use crate::body::ResponseBody;
use crate::headers::{retry_after_value, RateLimitHeaders};
use crate::key::KeyExtractor;
use crate::layer::{Config, MissingKey};
use crate::metrics::{answered, Passed};

/// The body of a 429 answer.
const REFUSED_TEXT: &str = "too many requests\n";

/// The body of a rejection for a request without a key.
const MISSING_KEY_TEXT: &str = "request has no rate-limit key\n";

/// The body of a 503: the limiter could not decide and its failure policy refuses.
const UNAVAILABLE_TEXT: &str = "rate limiter unavailable\n";

/// Middleware that admits a request when its key has room in the limiter's window and
/// answers `429 Too Many Requests` otherwise; made by [`RateLimitLayer`](crate::RateLimitLayer).
///
/// For each request: the key is extracted; `check_and_hit` decides and records at the clock's
/// `now`; `status` at the same `now` gives the fields. An admitted request goes to the inner
/// service and its response gets `RateLimit` and `RateLimit-Policy` (unless turned off); a
/// refused one never reaches it and is answered with 429, `Retry-After`, both fields and a
/// short plain-text body.
pub struct RateLimit<S, L: ?Sized, E> {
    inner: S,
    limiter: Arc<L>,
    extractor: E,
    config: Arc<Config>,
}

impl<S, L: ?Sized, E> RateLimit<S, L, E> {
    pub(crate) fn from_parts(inner: S, limiter: Arc<L>, extractor: E, config: Arc<Config>) -> Self {
        Self {
            inner,
            limiter,
            extractor,
            config,
        }
    }

    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S, L, E, ReqBody, ResBody> Service<Request<ReqBody>> for RateLimit<S, L, E>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>> + Clone,
    E: KeyExtractor<ReqBody>,
    L: Decide<E::Key> + ?Sized,
{
    type Response = Response<ResponseBody<ResBody>>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future, ResBody, L::Pending, S, Request<ReqBody>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        // A refusal does not use the readiness this reserves; the inner service keeps it for
        // the next request, as tower allows.
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let Some(key) = self.extractor.extract(&request) else {
            return match self.config.missing_key {
                MissingKey::Allow => {
                    ResponseFuture::inner(self.inner.call(request), None, Passed::MISSING_KEY)
                }
                MissingKey::Reject(status) => {
                    answered(status, "missing_key");
                    ResponseFuture::local(local_response(status, MISSING_KEY_TEXT))
                }
            };
        };
        let now = self.config.clock.now_ticks();
        let tick = self.limiter.tick().unwrap_or(self.config.tick);
        match L::decide(&self.limiter, &key, now, self.config.informational) {
            Decision::Ready(answer) => match outcome(&self.config, answer, tick) {
                Outcome::Pass(headers, passed) => {
                    ResponseFuture::inner(self.inner.call(request), headers, passed)
                }
                Outcome::Answer(response) => ResponseFuture::local(response),
            },
            Decision::Pending(pending) => {
                // The decision comes later: the request goes to the service that was made
                // ready for it, and a clone stays here for the next one (tower's way).
                let fresh = self.inner.clone();
                let ready = std::mem::replace(&mut self.inner, fresh);
                ResponseFuture::deciding(pending, ready, request, Arc::clone(&self.config), tick)
            }
        }
    }
}

/// What the layer does with a request once its limiter answered.
enum Outcome<B> {
    /// Pass it to the inner service, adding these fields to its response.
    Pass(Option<RateLimitHeaders>, Passed),
    /// Answer it without the inner service.
    Answer(Response<ResponseBody<B>>),
}

/// The layer's reading of `answer` (in ticks of `tick`): the rate-limit fields of an
/// admission or a 429 refusal, or a 503 when the limiter could not decide and its failure
/// policy refuses.
#[inline]
fn outcome<B>(config: &Config, answer: Answer, tick: std::time::Duration) -> Outcome<B> {
    match answer {
        Answer::Decided {
            admitted,
            limit,
            status,
            windows,
        } => {
            let headers = match windows {
                Some(windows) if limit.is_layered() && windows.len() == limit.window_count() => {
                    Some(RateLimitHeaders::layered(
                        &config.policy,
                        limit,
                        &windows,
                        admitted,
                        tick,
                    ))
                }
                _ => status.map(|status| {
                    RateLimitHeaders::new(&config.policy, limit, status, admitted, tick)
                }),
            };
            if admitted {
                Outcome::Pass(headers.filter(|_| config.informational), Passed::ADMITTED)
            } else {
                answered(StatusCode::TOO_MANY_REQUESTS, "refused");
                let mut response = local_response(StatusCode::TOO_MANY_REQUESTS, REFUSED_TEXT);
                if let Some(headers) = headers {
                    headers.apply(response.headers_mut());
                }
                Outcome::Answer(response)
            }
        }
        Answer::Undecided { admitted: true, .. } => Outcome::Pass(None, Passed::FAIL_OPEN),
        Answer::Undecided { retry_after, .. } => {
            answered(StatusCode::SERVICE_UNAVAILABLE, "fail_closed");
            let mut response = local_response(StatusCode::SERVICE_UNAVAILABLE, UNAVAILABLE_TEXT);
            response
                .headers_mut()
                .insert(RETRY_AFTER, retry_after_value(retry_after));
            Outcome::Answer(response)
        }
        // Answer is non-exhaustive: a kind of answer this layer does not know refuses.
        _ => {
            answered(StatusCode::SERVICE_UNAVAILABLE, "fail_closed");
            Outcome::Answer(local_response(
                StatusCode::SERVICE_UNAVAILABLE,
                UNAVAILABLE_TEXT,
            ))
        }
    }
}

/// A response the layer makes itself: `status`, and `text` as a plain-text body.
fn local_response<B>(status: StatusCode, text: &'static str) -> Response<ResponseBody<B>> {
    let mut response = Response::new(ResponseBody::local(text));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

impl<S: Clone, L: ?Sized, E: Clone> Clone for RateLimit<S, L, E> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            limiter: Arc::clone(&self.limiter),
            extractor: self.extractor.clone(),
            config: Arc::clone(&self.config),
        }
    }
}

impl<S: fmt::Debug, L: ?Sized, E: fmt::Debug> fmt::Debug for RateLimit<S, L, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimit")
            .field("inner", &self.inner)
            .field("extractor", &self.extractor)
            .field("config", &*self.config)
            .finish_non_exhaustive()
    }
}

pin_project! {
    /// The response future of [`RateLimit`]: a decision still to come (a remote limiter's),
    /// then the inner service's future, whose response gets the informational fields, or a
    /// response the layer made itself.
    pub struct ResponseFuture<F, B, P, S, R> {
        #[pin]
        state: State<F, B, P, S, R>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F, B, P, S, R> {
        Deciding {
            #[pin]
            pending: P,
            // Taken when the decision comes. Boxed: a request and a service are large, and
            // an in-process decision, which never waits, would carry their size in every
            // future it returns (measured: a refusal 9% slower unboxed).
            waiting: Option<Box<Waiting<S, R>>>,
        },
        Inner { #[pin] future: F, headers: Option<RateLimitHeaders>, passed: Passed },
        Local { response: Option<Response<ResponseBody<B>>> },
    }
}

/// What a request waiting for its decision holds: the service made ready for it, the request
/// and how to read the answer.
struct Waiting<S, R> {
    service: S,
    request: R,
    config: Arc<Config>,
    tick: std::time::Duration,
}

impl<F, B, P, S, R> ResponseFuture<F, B, P, S, R> {
    fn inner(future: F, headers: Option<RateLimitHeaders>, passed: Passed) -> Self {
        Self {
            state: State::Inner {
                future,
                headers,
                passed,
            },
        }
    }

    fn local(response: Response<ResponseBody<B>>) -> Self {
        Self {
            state: State::Local {
                response: Some(response),
            },
        }
    }

    fn deciding(
        pending: P,
        service: S,
        request: R,
        config: Arc<Config>,
        tick: std::time::Duration,
    ) -> Self {
        Self {
            state: State::Deciding {
                pending,
                waiting: Some(Box::new(Waiting {
                    service,
                    request,
                    config,
                    tick,
                })),
            },
        }
    }
}

impl<F, B, P, S, R, Error> Future for ResponseFuture<F, B, P, S, R>
where
    F: Future<Output = Result<Response<B>, Error>>,
    P: Future<Output = Answer>,
    S: Service<R, Future = F>,
{
    type Output = Result<Response<ResponseBody<B>>, Error>;

    /// # Panics
    /// If polled again after it returned `Ready`.
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            let next = match self.as_mut().project().state.project() {
                StateProj::Deciding { pending, waiting } => {
                    let answer = ready!(pending.poll(cx));
                    let Waiting {
                        mut service,
                        request,
                        config,
                        tick,
                    } = *waiting
                        .take()
                        .expect("ResponseFuture polled after completion");
                    match outcome(&config, answer, tick) {
                        Outcome::Pass(headers, passed) => State::Inner {
                            future: service.call(request),
                            headers,
                            passed,
                        },
                        Outcome::Answer(response) => State::Local {
                            response: Some(response),
                        },
                    }
                }
                StateProj::Inner {
                    future,
                    headers,
                    passed,
                } => {
                    let mut response = ready!(future.poll(cx))?.map(ResponseBody::inner);
                    passed.responded(response.status());
                    if let Some(headers) = headers.take() {
                        headers.apply(response.headers_mut());
                    }
                    return Poll::Ready(Ok(response));
                }
                StateProj::Local { response } => {
                    return Poll::Ready(Ok(response
                        .take()
                        .expect("ResponseFuture polled after completion")))
                }
            };
            self.as_mut().project().state.set(next);
        }
    }
}

impl<F, B, P, S, R> fmt::Debug for ResponseFuture<F, B, P, S, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}
