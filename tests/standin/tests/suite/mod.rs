mod faults;
mod openai;
mod responses;
mod stream;
mod validation;
