//! [`RateLimit`]: the middleware service, and its response future.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use http::header::{HeaderValue, CONTENT_TYPE};
use http::{Request, Response, StatusCode};
use pin_project_lite::pin_project;
use slidelimit::RateLimiter;
use tower_service::Service;

use crate::body::ResponseBody;
use crate::headers::RateLimitHeaders;
use crate::key::KeyExtractor;
use crate::layer::{Config, MissingKey};

/// The body of a 429 answer.
const REFUSED_TEXT: &str = "too many requests\n";

/// The body of a rejection for a request without a key.
const MISSING_KEY_TEXT: &str = "request has no rate-limit key\n";

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
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    E: KeyExtractor<ReqBody>,
    L: RateLimiter<E::Key> + ?Sized,
{
    type Response = Response<ResponseBody<ResBody>>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future, ResBody>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        // A refusal does not use the readiness this reserves; the inner service keeps it for
        // the next request, as tower allows.
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let Some(key) = self.extractor.extract(&request) else {
            return match self.config.missing_key {
                MissingKey::Allow => ResponseFuture::inner(self.inner.call(request), None),
                MissingKey::Reject(status) => {
                    ResponseFuture::local(local_response(status, MISSING_KEY_TEXT))
                }
            };
        };
        let now = self.config.clock.now_ticks();
        let admitted = self.limiter.check_and_hit(&key, now);
        if admitted && !self.config.informational {
            return ResponseFuture::inner(self.inner.call(request), None);
        }
        let headers = RateLimitHeaders::new(
            &self.config.policy,
            self.limiter.limit(),
            self.limiter.status(&key, now),
            admitted,
            self.config.tick,
        );
        if admitted {
            ResponseFuture::inner(self.inner.call(request), Some(headers))
        } else {
            let mut response = local_response(StatusCode::TOO_MANY_REQUESTS, REFUSED_TEXT);
            headers.apply(response.headers_mut());
            ResponseFuture::local(response)
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
    /// The response future of [`RateLimit`]: the inner service's, whose response gets the
    /// informational fields, or a response the layer made itself.
    pub struct ResponseFuture<F, B> {
        #[pin]
        state: State<F, B>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F, B> {
        Inner { #[pin] future: F, headers: Option<RateLimitHeaders> },
        Local { response: Option<Response<ResponseBody<B>>> },
    }
}

impl<F, B> ResponseFuture<F, B> {
    fn inner(future: F, headers: Option<RateLimitHeaders>) -> Self {
        Self {
            state: State::Inner { future, headers },
        }
    }

    fn local(response: Response<ResponseBody<B>>) -> Self {
        Self {
            state: State::Local {
                response: Some(response),
            },
        }
    }
}

impl<F, B, Error> Future for ResponseFuture<F, B>
where
    F: Future<Output = Result<Response<B>, Error>>,
{
    type Output = Result<Response<ResponseBody<B>>, Error>;

    /// # Panics
    /// If polled again after it returned `Ready` for a response the layer made itself.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Inner { future, headers } => {
                let mut response = ready!(future.poll(cx))?.map(ResponseBody::inner);
                if let Some(headers) = headers.take() {
                    headers.apply(response.headers_mut());
                }
                Poll::Ready(Ok(response))
            }
            StateProj::Local { response } => Poll::Ready(Ok(response
                .take()
                .expect("ResponseFuture polled after completion"))),
        }
    }
}

impl<F, B> fmt::Debug for ResponseFuture<F, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}
